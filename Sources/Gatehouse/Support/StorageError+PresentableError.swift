import GatehouseStorage
import HTTPTypes

/// An unreachable store is the member's "temporarily unavailable" page (`503`); anything else is an internal error.
extension StorageError: PresentableError {
    public var status: HTTPResponse.Status { isUnavailable ? .serviceUnavailable : .internalServerError }

    public var messageKey: String { isUnavailable ? "error_unavailable" : "error_internal" }
}
