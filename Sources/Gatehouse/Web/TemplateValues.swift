/// What a template is given, with absence as absence: a value that is an `Optional` boxed in `Any` is unwrapped, and
/// a missing one leaves its key out, at any depth. Mustache would print a boxed `nil` as the text `nil` (and a boxed
/// value as `Optional(…)`), where a section (`{{#status}}…{{/status}}`) should see nothing at all.
enum TemplateValues {
    static func present(_ values: [String: Any]) -> [String: Any] {
        values.compactMapValues(present)
    }

    /// `value` without its `Optional` boxes, its dictionaries' and lists' values likewise; `nil` when it is absent.
    static func present(_ value: Any) -> Any? {
        switch value {
        case let optional as any OptionalValue:
            return optional.wrapped.flatMap(present)
        case let dictionary as [String: Any]:
            return present(dictionary)
        case let list as [Any]:
            return list.compactMap(present)
        default:
            return value
        }
    }
}

/// An `Optional` of any wrapped type, seen through `Any`.
private protocol OptionalValue {
    var wrapped: Any? { get }
}

extension Optional: OptionalValue {
    fileprivate var wrapped: Any? { self.map { $0 as Any } }
}
