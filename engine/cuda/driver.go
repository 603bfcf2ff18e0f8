package cuda

import (
	"fmt"
	"math"
)

// Ptr is a device address (CUdeviceptr).
type Ptr uint64

// DriverError is a failed CUDA driver call.
type DriverError struct {
	Call string
	Code int
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY
	Desc string
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Call, e.Name, e.Code, e.Desc)
}

// DeviceInfo describes a GPU.
type DeviceInfo struct {
	Ordinal            int
	Name               string
	Major, Minor       int // compute capability
	SMs                int
	TotalMem           uint64 // bytes
	DriverVersion      int    // e.g. 13000 for CUDA 13.0
	DriverPath         string
	ComputeCapability  int // Major·10 + Minor, the Arch of CompileOptions
	MaxThreadsPerBlock int
}

// Grid is a kernel launch's shape: blocks of Block threads, Grid blocks (x only: the kernels index flat).
type Grid struct {
	Blocks, Threads int
	SharedBytes     int
}

// GridFor returns a launch of threads-wide blocks covering n elements.
func GridFor(n, threads int) Grid {
	return Grid{Blocks: (n + threads - 1) / threads, Threads: threads}
}

// slot turns a kernel argument into the 8-byte slot the launch passes by address: device pointers and 64-bit
// integers whole, 32-bit integers and floats in the low half (little-endian), as the kernel's parameter types
// read them.
func slot(a any) (uint64, error) {
	switch v := a.(type) {
	case Ptr:
		return uint64(v), nil
	case int32:
		return uint64(uint32(v)), nil
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			return 0, fmt.Errorf("cuda: kernel argument %d does not fit an int (use int64 for long)", v)
		}
		return uint64(uint32(int32(v))), nil
	case int64:
		return uint64(v), nil
	case float32:
		return uint64(math.Float32bits(v)), nil
	case float64:
		return math.Float64bits(v), nil
	}
	return 0, fmt.Errorf("cuda: kernel argument of type %T: want Ptr, int, int32, int64, float32 or float64", a)
}
