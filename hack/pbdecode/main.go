// Command pbdecode writes restdecode_gen.go, the informer's protobuf
// decoder of the built-in types of internal/pbdecode.roots, which decodes
// strings straight into interned copies (see
// internal/pbdecode). Run by go generate in the repository's root:
//
//	go run ./hack/pbdecode -o restdecode_gen.go
package main

import (
	"flag"
	"log"
	"os"

	"github.com/kubetyped/informer/internal/pbdecode"
)

func main() {
	out := flag.String("o", "restdecode_gen.go", "the file to write")
	flag.Parse()
	src, err := pbdecode.Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
