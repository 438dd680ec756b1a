package ircmain

import (
	"strings"
	"testing"
)

func TestListFrontendFlags(t *testing.T) {
	for flag, wants := range map[string][]string{
		"--list-backends": {"eager:", "aot_eager:", "interp:", "nvptx:"},
		"--list-modes":    {"default:", "reduce-overhead:", "max-autotune:", "max-autotune-no-cudagraphs:"},
		"--list-options": {`Mode            frontend.Mode, a string; default "default"`, "Dynamic         frontend.Dynamic, one of auto, true, false; default auto",
			"Fullgraph       bool; default false", `Backend         string; default "" (nvptx`, "BackendOptions  map[string]any; default nil", "RecompileLimit  int; default 8"},
	} {
		r := irc(t, "", flag)
		for _, want := range wants {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s lacks %q:\n%s", flag, want, r.stdout)
			}
		}
	}
}
