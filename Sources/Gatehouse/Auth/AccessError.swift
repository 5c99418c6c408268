import GatehouseCore
import HTTPTypes

/// A signed-in member asked for something their level, roles or groups do not open.
public enum AccessError: PresentableError, Equatable {
    /// `returnTo`: the gateway path the member asked for, reached after the upgrade.
    case registrationRequired(returnTo: String?)
    /// The app's roles or groups: the first role the member lacks, else the groups they are in none of.
    case appNotAllowed(String, missing: PathRules.Lack?)
    /// The app's rules per path refuse this path: closed to everyone, or the member lacks what its rule requires.
    case pathNotAllowed(String, PathRules.Lack?)
    /// The operator console, for members with `operator.role` only.
    case operatorOnly
    /// The path or the app asks the member to sign in at the provider again (recently enough, or with another class
    /// of sign-in), then come back to `returnTo`; `gateway` is the gateway's origin (a step-up may start on an app host).
    case signInAgain(StepUpRequest, returnTo: String, gateway: String)
    /// The path asks for the member's upgrade PIN, entered recently, then to come back to `returnTo`.
    case pinRequired(returnTo: String, gateway: String)

    public var status: HTTPResponse.Status {
        switch self {
        case .signInAgain, .pinRequired: .unauthorized
        default: .forbidden
        }
    }

    /// Where the member proves themselves again, for a step-up: an absolute URL of the gateway's.
    public var stepUpURL: String? {
        switch self {
        case .signInAgain(let request, let returnTo, let gateway):
            gateway + FormEncoding.url(Paths.signInStart, adding: [("return_to", returnTo)] + request.queryPairs)
        case .pinRequired(let returnTo, let gateway): gateway + FormEncoding.url(Paths.pinCheck, adding: [("return_to", returnTo)])
        default: nil
        }
    }

    /// The same step-up, coming back to `returnTo` instead (a kept form's page).
    public func returning(to returnTo: String) -> AccessError {
        switch self {
        case .signInAgain(let request, _, let gateway): .signInAgain(request, returnTo: returnTo, gateway: gateway)
        case .pinRequired(_, let gateway): .pinRequired(returnTo: returnTo, gateway: gateway)
        default: self
        }
    }

    public var reason: String {
        switch self {
        case .registrationRequired: "registration_required"
        case .appNotAllowed(let slug, _): "app_not_allowed:\(slug)"
        case .operatorOnly: "operator_only"
        case .pathNotAllowed(let slug, nil): "path_denied:\(slug)"
        case .pathNotAllowed(let slug, .some(let lack)): "path_not_allowed:\(slug):\(Self.kind(lack))"
        case .signInAgain: "reauthentication_required"
        case .pinRequired: "pin_required"
        }
    }

    public var isRefusal: Bool { true }

    public var messageKey: String {
        switch self {
        case .registrationRequired: "feature_locked"
        case .appNotAllowed(_, .role?): "error_app_role"
        case .appNotAllowed(_, .group?): "error_app_group"
        case .appNotAllowed: "error_app_not_allowed"
        case .operatorOnly: "error_operator_only"
        case .pathNotAllowed(_, nil): "error_path_denied"
        case .pathNotAllowed(_, .some(let lack)): "error_path_\(Self.kind(lack))"
        case .signInAgain: "error_sign_in_again"
        case .pinRequired: "error_pin_required"
        }
    }

    /// What fills the page's text: the role, the groups or the claim the member lacks.
    public var messageArguments: [String: String] {
        switch self {
        case .pathNotAllowed(_, .role(let role)), .appNotAllowed(_, .role(let role)?): ["role": role]
        case .pathNotAllowed(_, .group(let groups)), .appNotAllowed(_, .group(let groups)?): ["groups": groups.joined(separator: ", ")]
        case .pathNotAllowed(_, .claim(let claim)): ["claim": claim]
        default: [:]
        }
    }

    static func kind(_ lack: PathRules.Lack) -> String {
        switch lack {
        case .level: "level"
        case .role: "role"
        case .group: "group"
        case .claim: "claim"
        case .network: "network"
        case .recentSignIn: "sign_in"
        case .pin: "pin"
        }
    }
}

extension GatehouseConfiguration {
    /// The console's pages refuse a member without `operator.role` ("This page is for operators", or its JSON).
    func requireOperator(_ identity: MemberIdentity) throws(AccessError) {
        guard isOperator(identity) else { throw .operatorOnly }
    }
}
