/// The powerful browser features (camera, microphone, location, …) a page may use, per app: a grant a member gives
/// is the origin's, so on path mounts, which share the gateway's origin, a grant given to one app would hold for
/// every other. Each app's pages are allowed only the features its `apps[].permissions` names; the gateway's own
/// pages none.
public enum PermissionsPolicy {
    /// The features the header turns off unless allowed (those a browser asks the member for, or that reach devices),
    /// each one browsers know: a name Chromium does not (`bluetooth`) is a console error on every page of every app.
    public static let features = [
        "camera", "microphone", "geolocation", "display-capture", "usb", "serial", "hid", "midi", "payment",
    ]

    /// The header's value: `allowed` features for the page's own origin, every other one for nobody.
    public static func header(allowing allowed: [String]) -> String {
        features.map { allowed.contains($0) ? "\($0)=(self)" : "\($0)=()" }.joined(separator: ", ")
    }
}
