package logs

import (
	"bytes"
	"testing"
)

func TestTopics(t *testing.T) {
	var buf bytes.Buffer
	prev := SetOutput(&buf)
	defer SetOutput(prev)
	defer Disable()

	Disable()
	Printf("fusion", "hidden %d", 1)
	if Enabled("fusion") || Writer("fusion") != nil || buf.Len() != 0 {
		t.Fatalf("disabled topic logged: %q", buf.String())
	}
	Enable(Parse(" fusion, ,memory")...)
	Printf("fusion", "group %d", 3)
	Printf("other", "hidden")
	Writer("memory").Write([]byte("a\nb\n"))
	want := "fusion: group 3\nmemory: a\nmemory: b\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
	Disable()
	Enable("all")
	if !Enabled("anything") {
		t.Fatal(`"all" does not enable every topic`)
	}
}
