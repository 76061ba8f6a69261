// An independent reader of a Go binary's pclntab for
// tests/test_go_symbols.py: Go's own debug/gosym (the standard
// library's decoder, not profd's). For every function of the binary
// named on the command line it prints, at its entry and at up to
// SAMPLES more pcs inside it, "PC<tab>FUNCTION<tab>FILE<tab>LINE": the function
// holding the pc (the real one, never an inlined one) and the file and
// line of the pc itself (for an inlined pc: the inlined code's).
package main

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os"
	"strconv"
)

func main() {
	f, err := elf.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	samples, _ := strconv.Atoi(os.Args[2])
	sec := f.Section(".gopclntab")
	if sec == nil {
		sec = f.Section(".data.rel.ro.gopclntab")
	}
	data, err := sec.Data()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, f.Section(".text").Addr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := make([]byte, 0, 1<<20)
	for _, fn := range tab.Funcs {
		step := (fn.End - fn.Entry) / uint64(samples+1)
		if step == 0 {
			step = 1
		}
		for pc := fn.Entry; pc < fn.End; pc += step {
			file, line, g := tab.PCToLine(pc)
			if g == nil {
				continue
			}
			out = append(out, fmt.Sprintf("%x\t%s\t%s\t%d\n", pc, g.Name, file, line)...)
			if len(out) > 1<<19 {
				os.Stdout.Write(out)
				out = out[:0]
			}
		}
	}
	os.Stdout.Write(out)
}
