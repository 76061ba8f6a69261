// Go workload for tests/test_go_symbols.py: one goroutine spins in a
// known chain, main.main -> main.work (noinline) -> main.spin
// (noinline) -> main.mix (small: the compiler inlines it into spin,
// checked with -gcflags=-m) -> main.rotate (inlined into mix), so most
// samples land on pcs of inlined code.
//
// Go's own view is the oracle: the program prints the frames
// runtime.Callers + runtime.CallersFrames give ("TAG F@FILE:LINE;...
// PC;PC...", innermost first, then the raw pcs) from spin ("chain"),
// then, once mix faulted on a nil pointer inside spin's inlined copy of
// it, from the deferred recover ("fault": Go's traceback of a faulting
// pc in inlined code, inlined frames included), then "ready", and spins
// until killed. It starts with "entry PC": where main.work's code is
// (a PIE's pcs are its ELF addresses plus the load bias).
package main

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

var (
	sink    uint64
	faulted bool
	readied bool
	one     = uint64(1)
	ptr     = &one // set to nil once: mix faults inside spin's inlined code
)

func frames(pcs []uintptr) []string {
	var out []string
	fs := runtime.CallersFrames(pcs)
	for {
		f, more := fs.Next()
		out = append(out, fmt.Sprintf("%s@%s:%d", f.Function, f.File, f.Line))
		if !more {
			break
		}
	}
	return out
}

// report prints Go's frames from its caller down, and the raw pcs.
//
//go:noinline
func report(tag string) {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	var raw []string
	for _, pc := range pcs[:n] {
		raw = append(raw, strconv.FormatUint(uint64(pc), 16))
	}
	fmt.Printf("%s %s %s\n", tag, strings.Join(frames(pcs[:n]), ";"), strings.Join(raw, ";"))
}

func rotate(x uint64) uint64 {
	return x<<13 | x>>51
}

func mix(x, i uint64) uint64 {
	return rotate(x)*0x9e3779b97f4a7c15 ^ (x + i + *ptr)
}

// spin runs mix until it faults (once: ptr nil), then for good.
//
//go:noinline
func spin(n uint64) (r uint64) {
	defer func() {
		if recover() != nil {
			report("fault")
			faulted = true
			ptr = &one
		}
	}()
	x := n
	for i := uint64(0); ; i++ {
		x = mix(x, i)
		if i == 1<<20 {
			sink = x
			if !faulted {
				report("chain")
				ptr = nil
			} else if !readied {
				readied = true
				fmt.Println("ready")
				os.Stdout.Sync()
			}
		}
	}
}

//go:noinline
func work() {
	for {
		sink = spin(sink + 1)
	}
}

func main() {
	// where work's code is at run time: a PIE's load bias
	fmt.Printf("entry %x\n", reflect.ValueOf(work).Pointer())
	work()
}
