// Go workload for tests/test_go_unwind.py: goroutines whose hot paths
// cross runtime.systemstack (goroutine creation storm: newproc; slice
// growth: mallocgc and GC assists; runtime.GC()), runtime.mcall (channel
// parking) and Go assembly that uses rbp as a general register
// (crypto/sha256.block).
//
// Go's own view is the oracle: each hot function prints, once, the chain
// runtime.Callers gives from it to the goroutine's bottom, as
// "chain HOT F1;F2;...;runtime.goexit", then the program prints "ready"
// and works until killed.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

var (
	sink    []byte
	sum     [32]byte
	printed sync.Map
	waiting sync.WaitGroup
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

//go:noinline
func spawnStorm() {
	chain()
	done := make(chan struct{}, 1024)
	for i := 0; i < 1000; i++ {
		go func() { done <- struct{}{} }()
	}
	for i := 0; i < 1000; i++ {
		<-done
	}
}

//go:noinline
func growSlices() {
	chain()
	var s []byte
	for i := 0; i < 1<<20; i += 4096 {
		s = append(s, make([]byte, 4096)...)
	}
	sink = s
}

//go:noinline
func hashBig(buf []byte) {
	chain()
	sum = sha256.Sum256(buf)
}

//go:noinline
func collect() {
	chain()
	runtime.GC()
}

// The goroutines' functions take no arguments: a go statement with
// arguments runs a wrapper closure, which Go's traceback hides.
var buf = make([]byte, 1<<20)

//go:noinline
func spawnLoop() {
	for {
		spawnStorm()
	}
}

//go:noinline
func growLoop() {
	for {
		growSlices()
	}
}

//go:noinline
func hashLoop() {
	for {
		hashBig(buf)
	}
}

//go:noinline
func gcLoop() {
	for {
		collect()
	}
}

func main() {
	waiting.Add(4)
	go spawnLoop()
	go growLoop()
	go hashLoop()
	go gcLoop()
	waiting.Wait()
	fmt.Println("ready")
	os.Stdout.Sync()
	time.Sleep(time.Hour)
}
