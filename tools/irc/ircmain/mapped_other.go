//go:build !linux

package ircmain

import (
	"errors"
	"os"
)

// mappedText is an input file mapped into memory; irc maps files on
// Linux only (mapped_linux.go) and reads them elsewhere.
type mappedText struct{}

// mapText reports that mapping is not available here.
func mapText(*os.File, int64) (*mappedText, error) {
	return nil, errors.ErrUnsupported
}

func (*mappedText) text() string          { return "" }
func (*mappedText) release(int)           {}
func (*mappedText) contains(uintptr) bool { return false }
