package exec

import (
	"os"
	"testing"
)

// testPTXAS is the ptxas FindPTXAS found when the tests started ("" for
// none), for the tests that run a real one.
var testPTXAS string

// TestMain runs the tests with PTXASEnv off, so that the default load
// policy (LoadPolicy.PTXAS) leaves the kernels to the device: the fake
// device's "cubins" are its PTX texts, which a real ptxas would turn into
// ELF images it cannot run. Tests of ptxas set PTXASEnv themselves or use
// testPTXAS.
func TestMain(m *testing.M) {
	testPTXAS, _ = FindPTXAS()
	os.Setenv(PTXASEnv, "off")
	os.Exit(m.Run())
}
