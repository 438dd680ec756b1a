package gpu

import (
	"errors"
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Thread-block clusters (sm_90): a kernel with ClusterSizeAttr = n runs
// its blocks in clusters of n consecutive blocks along x (blocks c·n to
// c·n+n−1 of each grid row), which the hardware schedules at once on
// neighbouring SMs. A block of a cluster may arrive at the mbarriers of
// the others (gpu.mbarrier_arrive_cluster), receive the boxes a TMA copy
// of another block multicasts (gpu.tma_load's multicast mask), and meet
// all of them at the split cluster barrier (gpu.cluster_arrive, then
// gpu.cluster_wait). A block's rank in its cluster
// is its x index modulo n. A kernel without the attribute has clusters
// of one block, in which these ops address the block itself.
const (
	ClusterArriveOp         = OpClusterArrive
	ClusterWaitOp           = OpClusterWait
	MbarrierArriveClusterOp = OpMbarrierArriveCluster
)

// ClusterSizeAttr is the kernel attribute (an integer, 1 to
// MaxClusterSize) giving its clusters' blocks along x; the launch's grid
// must be a multiple of it along x. It becomes PTX's .reqnctapercluster.
const ClusterSizeAttr = "gpu.cluster_size"

// MaxClusterSize is the largest portable cluster (CUDA's limit without
// the non-portable opt-in).
const MaxClusterSize = 8

// MulticastAttr is gpu.tma_load's optional multicast mask (an i64): bit r
// set sends the box to the block of rank r of the cluster, at the same
// workgroup offset, and signals the mbarrier at the same offset there.
const MulticastAttr = "multicast"

// ClusterSize is the cluster size of the gpu.func kernel fn: its
// ClusterSizeAttr, 1 without one.
func ClusterSize(fn *ir.Operation) int64 {
	if a, ok := fn.Attr(ClusterSizeAttr).(ir.IntegerAttr); ok {
		return a.Value
	}
	return 1
}

// verifyClusterSize checks a gpu.func's ClusterSizeAttr.
func verifyClusterSize(fn *ir.Operation) error {
	a := fn.Attr(ClusterSizeAttr)
	if a == nil {
		return nil
	}
	n, ok := a.(ir.IntegerAttr)
	if !ok || n.Value < 1 || n.Value > MaxClusterSize {
		return fmt.Errorf("attribute '%s' must be an integer from 1 to %d, not %v", ClusterSizeAttr, MaxClusterSize, a)
	}
	if !IsKernel(fn) {
		return fmt.Errorf("attribute '%s' applies to kernels only", ClusterSizeAttr)
	}
	return nil
}

var clusterOps = []*ir.OpDef{clusterArriveDef, clusterWaitDef, mbarrierArriveClusterDef}

var clusterArriveDef = &ir.OpDef{
	Name:    ClusterArriveOp,
	Summary: "Arrives at the cluster's barrier without waiting (sm_90)",
	Description: "As PTX `barrier.cluster.arrive` (release semantics at the cluster's " +
		"scope): counts the thread's arrival at the current phase of the barrier of " +
		"every thread of every block of the cluster (gpu.cluster_size), which completes " +
		"once all have arrived; the thread's memory operations before it (writes, " +
		"mbarrier initializations and arrivals, in any block of the cluster) are visible " +
		"to every thread after its gpu.cluster_wait. Each thread arrives once, then waits " +
		"(gpu.cluster_wait) before it arrives again; work between the two overlaps the " +
		"others' arrivals.",
	Example: `"gpu.cluster_arrive"() : () -> ()`,
	Verify:  verifyNoOperands,
}

var clusterWaitDef = &ir.OpDef{
	Name:    ClusterWaitOp,
	Summary: "Waits for the cluster's barrier the thread arrived at (sm_90)",
	Description: "As PTX `barrier.cluster.wait` (acquire semantics at the cluster's " +
		"scope): returns once every thread of the cluster has arrived at the phase of " +
		"the thread's own last gpu.cluster_arrive, which it must have executed. Before a " +
		"block's mbarriers receive another block's arrivals or copies, and before a block " +
		"exits while another may still signal it, the cluster meets so.",
	Example: `"gpu.cluster_wait"() : () -> ()`,
	Verify:  verifyNoOperands,
}

// verifyNoOperands checks a kernel op without operands or results.
func verifyNoOperands(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if op.NumOperands() != 0 || op.NumResults() != 0 {
		return errors.New("expects no operands and no results")
	}
	return nil
}

var mbarrierArriveClusterDef = &ir.OpDef{
	Name:    MbarrierArriveClusterOp,
	Summary: "Arrives at an asynchronous barrier of a block of the cluster (sm_90)",
	Description: "As PTX `mapa.shared::cluster` and `mbarrier.arrive.shared::cluster.b64`: " +
		"counts one arrival of the current phase of the mbarrier at `bars[index]` in the " +
		"workgroup memory of the cluster's block of rank `rank` (an i32 below the cluster " +
		"size; the thread's own block at its own rank), with gpu.mbarrier_arrive's release " +
		"semantics: a consumer's arrival after its reads of a stage are complete lets " +
		"another block's producer overwrite that stage.",
	Operands: []ir.ArgDoc{
		{Name: "bars, index", Doc: "1-D workgroup memref of i64 and the barrier's index"},
		{Name: "rank", Doc: "i32: the block of the cluster"},
	},
	Example: `"gpu.mbarrier_arrive_cluster"(%bars, %i, %r) : (memref<9xi64, 3>, index, i32) -> ()`,
	Verify:  verifyMbarrier(3),
}

// ClusterArrive inserts gpu.cluster_arrive.
func ClusterArrive(b *ir.Builder, loc ir.Location) *ir.Operation {
	return b.Op(ClusterArriveOp, loc, nil, nil)
}

// ClusterWait inserts gpu.cluster_wait.
func ClusterWait(b *ir.Builder, loc ir.Location) *ir.Operation {
	return b.Op(ClusterWaitOp, loc, nil, nil)
}

// MbarrierArriveCluster inserts gpu.mbarrier_arrive_cluster at bars[index]
// of the cluster's block rank (an i32).
func MbarrierArriveCluster(b *ir.Builder, loc ir.Location, bars, index, rank *ir.Value) *ir.Operation {
	return b.Op(MbarrierArriveClusterOp, loc, []*ir.Value{bars, index, rank}, nil)
}

// Multicast returns a gpu.tma_load's multicast mask, 0 when it copies to
// its own block only.
func Multicast(op *ir.Operation) int64 { return IntProp(op, MulticastAttr, 0) }

// verifyMulticast checks a gpu.tma_load's multicast mask against its
// kernel's cluster size.
func verifyMulticast(op *ir.Operation) error {
	a := op.Attr(MulticastAttr)
	if a == nil {
		return nil
	}
	m, ok := a.(ir.IntegerAttr)
	if !ok {
		return fmt.Errorf("requires '%s' to be an integer mask", MulticastAttr)
	}
	n := int64(1)
	if fn := op.ParentOfType(FuncOp); fn != nil {
		n = ClusterSize(fn)
	}
	if m.Value < 1 || m.Value >= 1<<n {
		return fmt.Errorf("multicast mask %#x names blocks outside a cluster of %d", m.Value, n)
	}
	return nil
}
