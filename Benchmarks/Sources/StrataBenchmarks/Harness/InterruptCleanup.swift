import Dispatch
import Foundation

/// Removes the run's temporary folder when the driver is interrupted (Ctrl-C or SIGTERM),
/// so an aborted run does not leave gigabytes of stores behind. Workload processes are in
/// the same process group and get the terminal's SIGINT themselves.
final class InterruptCleanup {
    private let sources: [any DispatchSourceSignal]

    init(folder: TemporaryFolder) {
        sources = [SIGINT, SIGTERM].map { signalNumber in
            // Dispatch sees the signal only when its default action is off; children get
            // the default action back on exec, since a handled signal is reset there.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                StandardError.write("\ninterrupted; removing \(folder.path)\n")
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
