// A Go program profiled by the Pyroscope Go SDK (github.com/grafana/pyroscope-go):
// hotA (under the tag phase=a) does several times the work of hotB and allocates 64 KiB a
// call; waitLock waits for a mutex holdLock keeps. Usage: go-app SERVER APP SECONDS.
// Prints the CPU seconds it spent, the seconds it ran and the bytes hotA allocated.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/grafana/pyroscope-go"
)

var sink [][]byte

func hotA() int {
	total := 0
	for i := 0; i < 6_000_000; i++ {
		total += i * i
	}
	sink = append(sink[:0], make([]byte, 64<<10))
	return total
}

func hotB() int {
	total := 0
	for i := 0; i < 1_000_000; i++ {
		total += i
	}
	return total
}

var mu sync.Mutex

//go:noinline
func holdLock() {
	for {
		mu.Lock()
		time.Sleep(time.Millisecond)
		mu.Unlock()
		runtime.Gosched()
	}
}

//go:noinline
func waitLock() {
	mu.Lock()
	mu.Unlock()
}

func cpuSeconds() float64 {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

func main() {
	seconds, _ := strconv.ParseFloat(os.Args[3], 64)
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	go holdLock()
	profiler, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: os.Args[2],
		ServerAddress:   os.Args[1],
		Tags:            map[string]string{"team": "sre"},
		UploadRate:      2 * time.Second,
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace,
			pyroscope.ProfileGoroutines, pyroscope.ProfileMutexCount, pyroscope.ProfileMutexDuration,
			pyroscope.ProfileBlockCount, pyroscope.ProfileBlockDuration,
		},
	})
	if err != nil {
		panic(err)
	}
	cpu0, start := cpuSeconds(), time.Now()
	result, calls := 0, 0
	for time.Since(start).Seconds() < seconds {
		pprof.Do(context.Background(), pprof.Labels("phase", "a"), func(context.Context) {
			result += hotA()
		})
		calls++
		result += hotB()
		waitLock()
	}
	cpu, wall := cpuSeconds()-cpu0, time.Since(start).Seconds()
	profiler.Stop()
	fmt.Println(result%2, cpu, wall, calls*64<<10)
}
