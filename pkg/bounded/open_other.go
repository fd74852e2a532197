//go:build !unix

package bounded

import (
	"io"
	"os"
)

// readRegular reads the regular file at path, at most limit bytes,
// appending to buf; the type is checked before and after opening, and the
// deadline of the caller guards the rest.
func readRegular(path string, limit int64, buf []byte) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := os.Open(path) //nolint:gosec // G304: callers build or are given the path
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	if st.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	from := len(buf)
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit)
	}
	return append(buf[:from], data...), nil
}
