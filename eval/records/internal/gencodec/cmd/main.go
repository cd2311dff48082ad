// Command gencodec writes the lean JSON codec of a record struct (see
// package gencodec). Run by go generate in eval/records:
//
//	gencodec -type Record -in record.go -out codec_gen.go
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/crab-testbed/crab/eval/records/internal/gencodec"
)

func main() {
	typ := flag.String("type", "Record", "the struct `TYPE` to write the codec of")
	in := flag.String("in", "record.go", "the Go `FILE` declaring it")
	out := flag.String("out", "codec_gen.go", "the `FILE` to write")
	pkg := flag.String("pkg", "records", "the package `NAME` of the output")
	flag.Parse()
	if err := run(*in, *out, *pkg, *typ); err != nil {
		fmt.Fprintln(os.Stderr, "gencodec:", err)
		os.Exit(2)
	}
}

func run(in, out, pkg, typ string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	code, err := gencodec.Generate(in, src, pkg, typ)
	if err != nil {
		return err
	}
	return os.WriteFile(out, code, 0o644)
}
