import os, time, resource, sys
def cpu(): r=resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime+r.ru_stime
data=b"x"*30000
N=300
def run(name, prealloc, sync):
    p=f"seg-{name}"
    if os.path.exists(p): os.unlink(p)
    if prealloc:
        fd=os.open(p, os.O_WRONLY|os.O_CREAT, 0o644)
        os.write(fd, b"\0"*(N*len(data)+4096)); os.fsync(fd)
        os.lseek(fd,0,0)
    else:
        fd=os.open(p, os.O_WRONLY|os.O_CREAT|os.O_APPEND, 0o644)
    c0=cpu(); t0=time.time()
    for i in range(N):
        os.write(fd,data); sync(fd)
    c=cpu()-c0; t=time.time()-t0
    print(f"{name}: {1000*c/N:.3f} ms cpu/op, {1000*t/N:.3f} ms wall/op")
    os.close(fd); os.unlink(p)
for r in range(2):
    run("append-fsync", False, os.fsync)
    run("append-fdatasync", False, os.fdatasync)
    run("prealloc-fdatasync", True, os.fdatasync)
    run("prealloc-fsync", True, os.fsync)
    run("append-nosync", False, lambda fd: None)
