// Command irc is Strata's counterpart of mlir-opt: it parses, verifies,
// transforms and prints .mlir files, and runs their functions. See package
// ircmain for the flags; this file only connects it to the process.
package main

import (
	"os"

	"github.com/strata-ir/strata/tools/irc/ircmain"
)

func main() {
	os.Exit(ircmain.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
