package autodiff

// flowNet is a directed graph with int64 capacities on which maxFlow finds
// a maximum flow (Dinic's algorithm: BFS levels, then blocking flows by
// DFS). The graphs the partitioner builds have two nodes per forward value,
// so a few thousand nodes at most.
type flowNet struct {
	adj   [][]int // edge indices leaving each node
	to    []int
	cap   []int64 // residual capacity; edge i^1 is the reverse of edge i
	level []int
	next  []int // per node, the first edge the DFS has not exhausted
}

// inf is the capacity of an edge that must never be cut. Sums of finite
// capacities stay far below it.
const inf = int64(1) << 62

func newFlowNet(n int) *flowNet { return &flowNet{adj: make([][]int, n)} }

// edge adds an edge u→v of capacity c.
func (f *flowNet) edge(u, v int, c int64) {
	f.adj[u] = append(f.adj[u], len(f.to))
	f.to, f.cap = append(f.to, v), append(f.cap, c)
	f.adj[v] = append(f.adj[v], len(f.to))
	f.to, f.cap = append(f.to, u), append(f.cap, 0)
}

// maxFlow pushes a maximum flow from s to t and returns its value; inf or
// more means that every cut has an uncuttable edge.
func (f *flowNet) maxFlow(s, t int) int64 {
	total := int64(0)
	for f.bfs(s, t) {
		f.next = make([]int, len(f.adj))
		for {
			pushed := f.dfs(s, t, inf)
			if pushed == 0 {
				break
			}
			total += pushed
			if total >= inf {
				return inf
			}
		}
	}
	return total
}

// bfs assigns levels by distance from s in the residual graph and reports
// whether t is reachable.
func (f *flowNet) bfs(s, t int) bool {
	f.level = f.reachable(s)
	return f.level[t] >= 0
}

// reachable returns each node's BFS distance from s in the residual graph,
// or -1 for nodes s cannot reach. After maxFlow, the reachable nodes are
// the source side of a minimum cut.
func (f *flowNet) reachable(s int) []int {
	level := make([]int, len(f.adj))
	for i := range level {
		level[i] = -1
	}
	level[s] = 0
	queue := []int{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range f.adj[u] {
			if v := f.to[e]; f.cap[e] > 0 && level[v] < 0 {
				level[v] = level[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return level
}

// dfs sends up to limit units from u to t along level-increasing edges.
func (f *flowNet) dfs(u, t int, limit int64) int64 {
	if u == t {
		return limit
	}
	for ; f.next[u] < len(f.adj[u]); f.next[u]++ {
		e := f.adj[u][f.next[u]]
		v := f.to[e]
		if f.cap[e] <= 0 || f.level[v] != f.level[u]+1 {
			continue
		}
		if pushed := f.dfs(v, t, min(limit, f.cap[e])); pushed > 0 {
			f.cap[e] -= pushed
			f.cap[e^1] += pushed
			return pushed
		}
	}
	return 0
}
