//go:build cgo && linux

package fakedcgm

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*gpu_struct_fn)(uintptr_t handle, unsigned int gpuId, void *s);
typedef int (*struct_fn)(uintptr_t handle, void *s);

// fakedcgm_call_versioned calls a versioned DCGM getter found in the global
// symbol scope with handle 0 and a zeroed 1 MiB buffer whose first word is
// version. It returns 1 when the symbol is missing.
static int fakedcgm_call_versioned(const char *sym, int takes_gpu, unsigned int version)
{
	void *fn = dlsym(RTLD_DEFAULT, sym);
	if (!fn)
		return 1;
	void *buf = calloc(1, 1 << 20);
	if (!buf)
		return 2;
	memcpy(buf, &version, sizeof(version));
	int rc = takes_gpu ? ((gpu_struct_fn)fn)(0, 0, buf) : ((struct_fn)fn)(0, buf);
	free(buf);
	return rc;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// CallVersioned calls the DCGM getter sym (dcgmGetDeviceAttributes,
// dcgmGetDeviceTopology or dcgmGetNvLinkLinkStatus; takesGPU says whether it
// takes a GPU id) of the loaded library with a null connection handle and a
// zeroed struct carrying version, so that a test can check the version
// check go-dcgm cannot reach. It returns the DCGM return code.
func CallVersioned(sym string, takesGPU bool, version uint32) (int, error) {
	cs := C.CString(sym)
	defer C.free(unsafe.Pointer(cs))
	gpu := C.int(0)
	if takesGPU {
		gpu = 1
	}
	rc := int(C.fakedcgm_call_versioned(cs, gpu, C.uint(version)))
	switch rc {
	case 1:
		return 0, fmt.Errorf("fakedcgm: %s not found in the loaded libdcgm", sym)
	case 2:
		return 0, fmt.Errorf("fakedcgm: out of memory calling %s", sym)
	}
	return rc, nil
}
