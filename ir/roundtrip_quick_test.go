package ir

import (
	"os"
	"testing"
)

func TestQuickRoundTrip(t *testing.T) {
	path := os.Getenv("RT_FILE")
	if path == "" {
		t.Skip()
	}
	src, _ := os.ReadFile(path)
	ctx := NewContext()
	ctx.AllowUnregistered = true
	m, err := Parse(ctx, string(src), ParseOptions{Filename: path})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path+".out", []byte(Sprint(m, PrintOptions{Generic: true})), 0o644)
}
