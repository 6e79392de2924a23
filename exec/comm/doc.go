// Package comm is the communicator of tpsim's real execution engine: each rank of a device mesh is a
// goroutine, and collectives really move float32 data between them with the message pattern, and so
// the byte traffic, of the algorithm they name.
//
// # Ranks and groups
//
// A World is a named mesh such as dp=2,tp=2. Ranks are numbered row-major over the dims: the last
// dim varies fastest, as torch.arange(n).reshape(sizes) in PyTorch's DeviceMesh. With dp=2,tp=2,
// rank = 2*dp + tp, so ranks {0,1} and {2,3} are the tp groups and {0,2} and {1,3} the dp groups.
// The group of a rank along a dim holds the ranks that share all its other coordinates; a member's
// index in the group is its coordinate along the dim, so groups list ranks in increasing order.
// Comm.WorldGroup (dim WorldDim, "world") spans every rank with index = global rank.
//
// # Chunking
//
// Reduce-scatter, all-gather and the two halves of the ring all-reduce split n elements into p
// chunks in order; chunk i has n/p+1 elements for i < n%p and n/p after (ChunkBounds), so uneven
// lengths work and a chunk may be empty (n < p). All-to-all needs n divisible by p.
//
// # What counts as a sent byte
//
// A rank's sent bytes are the float32 payload it puts on the wire: 4 bytes per element of every
// message it sends. Bytes it copies locally (its own chunk), message headers and received bytes do
// not count. Per rank, for n elements on a group of p > 1 (docs/architecture.md's bytes-per-rank table):
//
//	all_reduce     ring reduce-scatter + all-gather  2(p-1) messages  4*(2n - |c_i| - |c_(i+1)|)  = 2(p-1)/p*4n when p | n
//	reduce_scatter ring                              p-1 messages     4*(n - |c_i|)                = (p-1)/p*4n when p | n
//	all_gather     ring                              p-1 messages     4*(n - |c_(i+1)|)            = (p-1)/p*4n when p | n
//	all_to_all     pairwise                          p-1 messages     (p-1)/p*4n
//	broadcast      pipelined chain from the root     4n in ceil(n/65536) segments, except the last rank of the chain (root-1), which sends 0
//	send           one message                       4n
//
// where i is the rank's index and c_j is chunk j (indices mod p). Summed over the group, all-reduce
// sends 2(p-1)*4n bytes and reduce-scatter and all-gather (p-1)*4n, for any n. A group of size 1
// makes every collective a local copy (or nothing) with no bytes and no Stats row. Stats count, per
// (kind, dim), the calls, messages and bytes of one rank; KindRecv has no row, since a receive sends
// nothing.
//
// # Messages
//
// A message owns a copy of its payload: a receiver never aliases a sender's buffer, and a buffer may
// be reused as soon as the call that sent it returns. Each ordered pair of group members has a
// mailbox of 8 messages for collectives and another for Send/Recv, so a Send waits only when 8
// messages are already queued. All members of a group must call the same collectives in the same
// order with the same lengths; a mismatch that reaches the wire fails with ErrMismatch.
//
// The ring all-reduce sums chunk c in the order of ranks c+1, c+2, ..., c (mod p) and then copies
// the sum to every member, so all members end with identical bits (which a serial sum in rank order
// need not equal exactly). On two members the copy is folded into the sum: each member adds its
// chunk of both buffers and writes the sum into both (the all-gather's message is that write), the
// same messages, bytes and bits as the ring with a fifth less memory traffic.
//
// # Failures
//
// World.Run runs one goroutine per rank and never hangs on a rank that is gone: a call waiting for
// a rank whose function has returned fails at once, and a rank that fails (returns an error or
// panics) aborts the world, so every rank blocked in a call returns an *Error that names the
// operation, the group and the ranks that did not arrive, for example
//
//	comm: all_reduce on tp group [0 1]: rank 1 did not arrive (it failed: rank 1 panicked: boom)
//
// A rank stuck outside this package is caught by WithTimeout. A failed call also aborts the world,
// since its group's mailboxes are left in an unknown state.
//
// Programmer errors that one rank can see alone (a dst of the wrong length, a root out of range)
// panic, as documented on each method. Only this package and the rest of exec start goroutines and
// read the clock; the clock is read only for WithTimeout and WithTracer.
package comm
