"""The output of the tools the recorders run, one tool's output per module.

perf samples with their times (perf_samples), perf's sched_switch events (perf_switches),
bpftrace's off-CPU stacks (bpftrace_stacks), eu-stack's thread dumps (eu_stack), wall
mode's snapshotter's snapshots (wallsnap), py-spy's Chrome trace (py_spy_trace), and
callgrind's out file as the counts document the valgrind recorder stores (counts).
python_splice pairs perf samples with py-spy's trace for Python mode. None of these is a
file `perfsleuth import` reads: those are formats.READERS.
"""
