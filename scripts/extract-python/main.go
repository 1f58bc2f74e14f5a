// Extracts the python-build-standalone CPython that github.com/kluctl/go-embed-python
// carries into the directory given as the first argument.
package main

import (
	"fmt"
	"os"

	"github.com/kluctl/go-embed-python/python"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: extract-python DIR")
		os.Exit(2)
	}
	embedded, err := python.NewEmbeddedPythonWithTmpDir(os.Args[1], false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(embedded.GetExtractedPath())
}
