// Command pbdecode writes internal/wire/decode_gen.go, the informer's protobuf
// decoder of the built-in types of internal/pbdecode.roots, which decodes
// strings straight into interned copies (see
// internal/pbdecode). Run by go generate in internal/wire:
//
//	go run github.com/kubetyped/informer/hack/pbdecode -o decode_gen.go
package main

import (
	"flag"
	"log"
	"os"

	"github.com/kubetyped/informer/internal/pbdecode"
)

func main() {
	out := flag.String("o", "internal/wire/decode_gen.go", "the file to write")
	flag.Parse()
	src, err := pbdecode.Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
