/// The portal's sections: Web Apps, and the chat features Chats, Calls and Stories.
public enum FeatureTab: String, CaseIterable, Sendable {
    case webApps = "web_apps"
    case chats
    case calls
    case stories

    public var path: String {
        switch self {
        case .webApps: Paths.portal
        case .chats: Paths.chats
        case .calls: Paths.calls
        case .stories: Paths.stories
        }
    }
}
