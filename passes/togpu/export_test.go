package togpu

// SetDecodeMaxWarps sets the most warps a decode-attention block has (the
// tests split small caches over several blocks) and returns the undo.
func SetDecodeMaxWarps(n int64) (undo func()) {
	old := decodeMaxWarps
	decodeMaxWarps = n
	return func() { decodeMaxWarps = old }
}
