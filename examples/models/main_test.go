package main

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

func TestModels(t *testing.T) {
	for _, m := range []string{"cnn", "resnet", "gpt2"} {
		var out strings.Builder
		if err := run(&out, m, frontend.Options{Backend: frontend.InterpBackend}, 2); err != nil {
			t.Fatalf("%s: %v\n%s", m, err, out.String())
		}
		if !strings.Contains(out.String(), "step   1: loss") {
			t.Errorf("%s: output\n%s", m, out.String())
		}
	}
	if err := run(&strings.Builder{}, "vgg", frontend.Options{}, 1); err == nil || !strings.Contains(err.Error(), "unknown model") {
		t.Errorf("unknown model: %v", err)
	}
}
