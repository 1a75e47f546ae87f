/// The processors Strata's threads may use.
package enum Processors {
    /// How many processors this process may run on — on Linux its CPU affinity (`taskset`, a
    /// container limited to some CPUs), where Foundation's `activeProcessorCount` counts every
    /// processor online — read once. What runs at once: a migration closure's flushes are
    /// written on a thread of their own only with two or more, and the dry run models the
    /// overlap of threads with it. (Scan threads and transform workers still follow
    /// `activeProcessorCount`: on one processor a worker costs little, and the transform
    /// pipeline's bulk inserts were faster there than the sequential path's.)
    package static let usable = Platform.usableProcessorCount()
}
