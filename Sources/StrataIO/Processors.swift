/// The processors Strata's threads may use.
package enum Processors {
    /// How many processors this process may run on — on Linux its CPU affinity, so a store
    /// opened under `taskset` or in a container limited to some CPUs starts no more threads
    /// than it can run at once (Foundation's `activeProcessorCount` counts every processor
    /// online) — read once.
    package static let usable = Platform.usableProcessorCount()
}
