// Command irc is Strata's irc with the strength-reduce pass linked in, the
// way an out-of-tree project ships its own compiler driver.
package main

import (
	"os"

	_ "example.com/custompass/strengthreduce" // registers strength-reduce
	"github.com/strata-ir/strata/tools/irc/ircmain"
)

func main() {
	os.Exit(ircmain.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
