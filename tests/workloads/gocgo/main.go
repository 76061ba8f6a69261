// Go workload for tests/test_go_unwind.py's cgo test: a Go caller calls C
// (cOuter -> cInner, callers.c) on the thread's system stack (g0), and the
// C code calls back into Go (exported goSpin, goAlloc), which runs on the
// goroutine's stack again through crosscall2 and runtime.cgocallback.
// goSpin spins; goAlloc allocates (mallocgc on the system stack again,
// inside the callback, now and then); goNest calls C again (cDeep), which
// calls goDeep back: a callback inside a callback, which spins.
//
// Go's own view is the oracle: each callback prints, once, the chain
// runtime.Callers gives from it to the goroutine's bottom, as
// "chain HOT F1;F2;...;runtime.goexit", then the program prints "ready"
// and works until killed.
package main

// void cOuter(int which);
// void cDeep(void);
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

var (
	spinSink uint64
	allocs   [][]byte
	printed  sync.Map
	waiting  sync.WaitGroup
)

// chain prints the caller's chain (the hot function down) the first time.
func chain() {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var names []string
	for {
		f, more := frames.Next()
		names = append(names, f.Function)
		if !more {
			break
		}
	}
	if _, dup := printed.LoadOrStore(names[0], true); !dup {
		fmt.Printf("chain %s %s\n", names[0], strings.Join(names, ";"))
		waiting.Done()
	}
}

// The callbacks are not inlined into cgo's _cgoexp_ wrappers: each keeps
// a frame of its own, as Go's traceback shows it.
//
//export goSpin
//go:noinline
func goSpin() {
	chain()
	x := spinSink
	for i := uint64(0); i < 20000000; i++ {
		x = x*6364136223846793005 + i
	}
	spinSink = x
}

//export goAlloc
//go:noinline
func goAlloc() {
	chain()
	for i := 0; i < 512; i++ {
		allocs = append(allocs[:0], make([]byte, 24<<10))
	}
}

//export goNest
//go:noinline
func goNest() { C.cDeep() }

//export goDeep
//go:noinline
func goDeep() {
	chain()
	x := spinSink
	for i := uint64(0); i < 20000000; i++ {
		x = x*2862933555777941757 + i
	}
	spinSink = x
}

//go:noinline
func spinCaller() { C.cOuter(0) }

//go:noinline
func allocCaller() { C.cOuter(1) }

//go:noinline
func nestCaller() { C.cOuter(2) }

// main calls C itself (the chain ends main.main, runtime.main,
// runtime.goexit); goroutines make the other calls. Each callback holds
// a P while it runs: one P more than callbacks, and a GC rare enough not
// to keep goAlloc waiting for the spinning callbacks to stop.
func main() {
	runtime.GOMAXPROCS(4)
	debug.SetGCPercent(1000)
	waiting.Add(3)
	go allocCaller()
	go nestCaller()
	go func() {
		waiting.Wait()
		fmt.Println("ready")
		os.Stdout.Sync()
		time.Sleep(time.Hour)
		os.Exit(0)
	}()
	spinCaller()
}
