//go:build ignore

// gen.go regenerates errors_generated.go from errors.json. Run it with
// go generate ./store/jsapi/ after editing the table.
package main

import (
	"log"
	"os"

	"github.com/leafbox/leafbox/store/jsapi/internal/errgen"
)

func main() {
	data, err := os.ReadFile("errors.json")
	if err != nil {
		log.Fatal(err)
	}
	src, err := errgen.Generate(data)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("errors_generated.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
