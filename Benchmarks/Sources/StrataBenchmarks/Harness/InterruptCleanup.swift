import Dispatch
import Foundation

/// Cleans up when the driver is interrupted (Ctrl-C, SIGINT or SIGTERM): kills the workload
/// processes it started and removes the run's temporary folder, so an aborted run does not
/// leave gigabytes of stores behind. (A writer started by a workload process notices its
/// parent has gone and stops.)
final class InterruptCleanup {
    private let sources: [any DispatchSourceSignal]

    init(folder: TemporaryFolder) {
        sources = [SIGINT, SIGTERM].map { signalNumber in
            // Dispatch delivers the signal only when its default action is off. It catches
            // the signal with a handler of its own, and caught signals are reset to their
            // default on exec, so child processes are still stopped by Ctrl-C.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                StandardError.write("\ninterrupted; stopping workload processes and removing \(folder.path)\n")
                SelfProcess.killAll()
                try? folder.remove()
                exit(128 + signalNumber)
            }
            source.resume()
            return source
        }
    }

    /// Stops watching and restores the default actions.
    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
