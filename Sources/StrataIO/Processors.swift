/// The processors Strata's threads may use.
package enum Processors {
    /// How many processors this process may run on — on Linux its CPU affinity (`taskset`, a
    /// container limited to some CPUs), where Foundation's `activeProcessorCount` counts every
    /// processor online — read once. What runs at once: a migration closure's flushes are
    /// written on a thread of their own, the page log's frames built by the frame pipeline's
    /// worker and a scan spread over threads (`scanThreads`' default) only with two or more,
    /// and the dry run models the overlap of threads with it. (Transform workers still follow
    /// `activeProcessorCount`: the transform pipeline's bulk inserts were faster on one
    /// processor than the sequential path's.)
    package static let usable = Platform.usableProcessorCount()
}
