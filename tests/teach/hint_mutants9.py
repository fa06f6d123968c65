"""Seventh fresh set's classes (hints9): wrong kernels whose first message showed the symptom, or named another
bug, each in two spellings that are not the fresh set's text, in the style of tests/teach/hint_mutants8.py:
(exercise, label, subs, cls), ``cls`` a key of :data:`CLASSES` whose phrases (all of them; a tuple: any one list)
the first failing message must have; :data:`AVOID`: phrases of the old words it must not have. A look-alike that
must keep its own words (a tree combined with the wrong operator, the atomics right) stands beside them.

tests/teach/test_hint_fresh7.py runs them (the first failing hidden test of each, in this process).
"""

CLASSES = {
    "early return before a barrier": ["the early return at line", "ends the threads it holds before the barrier at",
                                      "do not return before a barrier"],
    "barrier inside a branch": ["stands inside `if ", "move the barrier out of the branch"],
    "float block count from /": ["is a float: `/` is Python's true division", "floor division, rounding up"],
    "shared cells one a thread, more cells than threads": ["store one cell a thread", "more than the block has threads",
                                                          "let each thread fill several cells"],
    "one output column a thread": ["each thread stored one element of out, thread t column t", "stands in no loop",
                                   "for j in range(t, out.shape[1], 32)"],
    "another atomic than the reference's": ["was updated with cuda.atomic.", "the reference's with cuda.atomic."],
    "min tree combined with max": ["the min's tree combines with max"],
    "products read the other buffer": ["lies in buffer 1", "read buffer t % 2, the one whose copy was waited for"],
    "no halo cells (the exercise's words kept)": ["the halo cells of the tile were never stored"],
}

# the words each class used to get, wrong or only general for it
AVOID = {
    "early return before a barrier": ["a barrier inside a branch or after an early return is undefined"],
    "barrier inside a branch": ["a barrier inside a branch or after an early return is undefined"],
    "float block count from /": [],
    "shared cells one a thread, more cells than threads": ["shared memory never zeroed (set every element"],
    "one output column a thread": ["the guard, a loop bound or the index stops short"],
    "another atomic than the reference's": ["tree combines with"],
    "min tree combined with max": ["was updated with cuda.atomic."],
    "products read the other buffer": ["which part of sA it reads"],
    "no halo cells (the exercise's words kept)": ["store one cell a thread"],
}

_HARMLESS = ("    s = THREADS // 2\n    while s > 0:\n", "    s = THREADS >> 1\n    while s >= 1:\n")  # two statements
# rewritten, the values the same: the kernel is no longer the reference's but one statement

MUTANTS = [
    ("block_sum", "early return on `not i < n` before the loads",
     [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n",
       "    if not i < x.shape[0]:\n        return\n    cache[t] = x[i]\n")],
     "early return before a barrier"),
    ("dot", "return in the else branch of the load's guard",
     [("    cache[t] = a[i] * b[i] if i < a.shape[0] else float32(0.0)\n",
       "    if i < a.shape[0]:\n        cache[t] = a[i] * b[i]\n    else:\n        return\n")],
     "early return before a barrier"),
    ("block_sum", "tree barrier indented into the step's branch",
     [("            cache[t] += cache[t + s]\n        cuda.syncthreads()  # this level is complete before the next reads it\n",
       "            cache[t] += cache[t + s]\n            cuda.syncthreads()\n")],
     "barrier inside a branch"),
    ("softmax_fused", "the barrier after the max read only by thread 0",
     [("    m = cache[0]\n    cuda.syncthreads()  # everyone has read the max before cache is reused for the sum\n",
       "    m = cache[0]\n    if t == 0:\n        cuda.syncthreads()\n")],
     "barrier inside a branch"),
    ("vecadd", "blocks = n / threads + 1",
     [("    blocks = (n + threads - 1) // threads\n", "    blocks = n / threads + 1\n")],
     "float block count from /"),
    ("tiled_matmul", "grid from true divisions",
     [("    return ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), (TILE, TILE)\n",
       "    gx = (N + TILE - 1) / TILE\n    gy = (M + TILE - 1) / TILE\n    return (gx, gy), (TILE, TILE)\n")],
     "float block count from /"),
    ("histogram", "bins zeroed at cuda.threadIdx.x only",
     [("    for b in range(t, BINS, THREADS):\n        local[b] = 0\n", "    local[cuda.threadIdx.x] = 0\n")],
     "shared cells one a thread, more cells than threads"),
    ("histogram", "bins zeroed at t + THREADS only",
     [("    for b in range(t, BINS, THREADS):\n        local[b] = 0\n", "    local[t + THREADS] = 0\n")],
     "shared cells one a thread, more cells than threads"),
    ("softmax_fused", "the store at column t under `if t < cols`",
     [("    for j in range(t, cols, THREADS):\n        out[r, j] = math.exp(x[r, j] - m) / total\n",
       "    if t < cols:\n        out[r, t] = math.exp(x[r, t] - m) / total\n")],
     "one output column a thread"),
    ("softmax_fused", "the store at column t through a local",
     [("    for j in range(t, cols, THREADS):\n        out[r, j] = math.exp(x[r, j] - m) / total\n",
       "    if t < x.shape[1]:\n        e = math.exp(x[r, t] - m)\n        out[r, t] = e / total\n")],
     "one output column a thread"),
    ("minmax", "atomic.max into the min's slot, the tree rewritten",
     [_HARMLESS, ("        cuda.atomic.min(out, 0, lo[0])", "        cuda.atomic.max(out, 0, lo[0])")],
     "another atomic than the reference's"),
    ("minmax", "atomic.min into the max's slot, the tree rewritten",
     [_HARMLESS, ("        cuda.atomic.max(out, 1, hi[0])", "        cuda.atomic.min(out, 1, hi[0])")],
     "another atomic than the reference's"),
    ("minmax", "min tree combined with max, the tree rewritten (the atomics right)",
     [_HARMLESS, ("            lo[t] = min(lo[t], lo[t + s])", "            lo[t] = max(lo[t], lo[t + s])")],
     "min tree combined with max"),
    ("async_pipeline", "next buffer's base inline in the products",
     [("        base = (t % 2) * TILE * TILE\n", ""),
      ("            acc += sA[base + ty * TILE + k] * sB[base + k * TILE + tx]",
       "            acc += sA[(t + 1) % 2 * TILE * TILE + ty * TILE + k] * sB[(t + 1) % 2 * TILE * TILE + k * TILE + tx]")],
     "products read the other buffer"),
    ("async_pipeline", "next buffer's number through a name",
     [("        base = (t % 2) * TILE * TILE\n", "        which = (t + 1) % 2\n        base = which * TILE * TILE\n")],
     "products read the other buffer"),
    ("conv1d", "no halo loads, the tile's cell through a name",
     [("    tile[t + R] = x[i] if i < n else float32(0.0)\n    if t < R:", "    me = t + R\n    tile[me] = x[i] if i < n else 0.0\n    if t < 0:")],
     "no halo cells (the exercise's words kept)"),
]
