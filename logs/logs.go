// Package logs holds Strata's topic logs: decision logs that passes and the
// runtime write when a topic is enabled, for people asking "why did the
// compiler do that?". Topics are enabled by the STRATA_LOGS environment
// variable (comma separated, e.g. STRATA_LOGS=fusion) or by Enable (irc
// --logs=fusion). Lines go to standard error unless SetOutput says otherwise.
//
// A disabled topic costs a couple of atomic loads: callers test Enabled
// before building an expensive message. Unknown topics are errors for irc
// and a warning for library users (Check, EnvError); Topics lists them.
package logs

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EnvVar is the environment variable read at start-up.
const EnvVar = "STRATA_LOGS"

var (
	topics atomic.Pointer[map[string]bool]

	mu  sync.Mutex // serialises writes, as passes log from parallel goroutines
	out io.Writer  = os.Stderr

	// start is when the process began, near enough (this package's
	// initialization): the origin of TimeTopic's stamps.
	start = time.Now()
)

// TimeTopic is not a topic of its own but a switch: when it is named
// (STRATA_LOGS=compile,time; "all" does not turn it on), every line of
// the topics on begins with the milliseconds since the process started,
// so that the lines of work running at once (a training step's forward
// and backward compiles, the libraries' warm-ups) can be put on one
// time line.
const TimeTopic = "time"

// stamp returns the line prefix TimeTopic asks for, or "".
func stamp() string {
	cur := topics.Load()
	if cur == nil || !(*cur)[TimeTopic] {
		return ""
	}
	return fmt.Sprintf("%9.1f ms ", float64(time.Since(start).Microseconds())/1000)
}

// Parse splits a comma-separated topic list, dropping blanks.
func Parse(list string) []string {
	var out []string
	for _, t := range strings.Split(list, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Enable turns the given topics on, in addition to those already on. The
// topic "all" enables every topic.
func Enable(names ...string) {
	next := map[string]bool{}
	if cur := topics.Load(); cur != nil {
		for k := range *cur {
			next[k] = true
		}
	}
	for _, n := range names {
		next[n] = true
	}
	topics.Store(&next)
}

// Disable turns every topic off.
func Disable() { topics.Store(&map[string]bool{}) }

// Enabled reports whether topic is on.
func Enabled(topic string) bool {
	if envWarn.Load() {
		warnEnv()
	}
	cur := topics.Load()
	return cur != nil && ((*cur)[topic] || (*cur)["all"])
}

// SetOutput sends log lines to w and returns the previous writer.
func SetOutput(w io.Writer) io.Writer {
	mu.Lock()
	defer mu.Unlock()
	prev := out
	out = w
	return prev
}

// Printf writes one line "topic: message" when topic is enabled.
func Printf(topic, format string, args ...any) {
	if !Enabled(topic) {
		return
	}
	at := stamp()
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "%s%s: %s\n", at, topic, strings.TrimSuffix(fmt.Sprintf(format, args...), "\n"))
}

// Writer returns a writer whose every Write is logged under topic, one
// line each, or nil when topic is disabled; it suits APIs that take an
// optional io.Writer for their log.
func Writer(topic string) io.Writer {
	if !Enabled(topic) {
		return nil
	}
	return topicWriter(topic)
}

type topicWriter string

func (w topicWriter) Write(p []byte) (int, error) {
	at := stamp()
	mu.Lock()
	defer mu.Unlock()
	for _, line := range strings.Split(strings.TrimSuffix(string(p), "\n"), "\n") {
		if _, err := fmt.Fprintf(out, "%s%s: %s\n", at, string(w), line); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
