//go:build !unix

package bounded

// openHeld reads the file and holds nothing: File.Hold is a Linux
// optimisation, and callers read by path when Result.Held is nil.
func openHeld(path string, limit int64, buf []byte) ([]byte, *Held, error) {
	data, err := readRegular(path, limit, buf)
	return data, nil, err
}

func (h *Held) again(int64, []byte) ([]byte, error) {
	return nil, ErrClosed
}

func closeFD(int) {}

// HoldLimit is 0: files are not held here.
func HoldLimit() int { return 0 }
