//go:build cgo && linux

package fakedcgm

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static const char *fakedcgm_dlerror(void) {
	const char *e = dlerror();
	return e ? e : "unknown dlopen error";
}
*/
import "C"

import (
	"fmt"
	"testing"
	"unsafe"
)

// Load builds the fake library and loads it into this process by absolute
// path with RTLD_GLOBAL, so that go-dcgm's dlopen("libdcgm.so.4") in
// dcgm.Init finds it by SONAME. The library stays loaded for the life of the
// process (go-dcgm's dlclose at Shutdown only drops its own reference), so
// loading twice is harmless. It skips the test when gcc is missing.
func Load(t testing.TB) *Lib {
	t.Helper()
	lib := Build(t)
	if err := lib.Preload(); err != nil {
		t.Fatal(err)
	}
	return lib
}

// Preload dlopens the library with RTLD_NOW|RTLD_GLOBAL.
func (l *Lib) Preload() error {
	path := C.CString(l.Path)
	defer C.free(unsafe.Pointer(path))
	if C.dlopen(path, C.RTLD_NOW|C.RTLD_GLOBAL) == nil {
		return fmt.Errorf("fakedcgm: dlopen %s: %s", l.Path, C.GoString(C.fakedcgm_dlerror()))
	}
	return nil
}
