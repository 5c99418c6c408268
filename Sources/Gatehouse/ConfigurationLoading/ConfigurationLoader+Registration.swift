import Foundation
import GatehouseCore

/// `registration.*` and `chat.*`: the upgrade flow, its code sender and webhook, who is offered it, and the homeserver
/// it makes accounts on.
extension ConfigurationLoader {
    func readRegistration(_ reader: inout ConfigurationReader, development: Bool) -> RegistrationConfiguration {
        let kindText = reader.optionalString("registration.code_sender.kind")
        let kind = kindText.flatMap(RegistrationConfiguration.SenderKind.init(rawValue:)) ?? (kindText == nil && development ? .log : nil)
        if let kindText, RegistrationConfiguration.SenderKind(rawValue: kindText) == nil {
            reader.report("registration.code_sender.kind", "must be log or http, got \"\(kindText)\"")
        } else if kindText == nil && !development {
            reader.report("registration.code_sender.kind", "is required outside development mode: http (log is for development mode only)")
        }
        let sender = endpoint(&reader, "registration.code_sender")
        if kind == .http && sender == nil { reader.report("registration.code_sender.url", "is required for the http sender") }
        let defaults = VerificationRules()
        let rules = VerificationRules(
            codesPerMember: reader.int("registration.codes_per_member_per_hour", default: defaults.codesPerMember, range: 1...100),
            codesPerPhoneNumber: reader.int("registration.codes_per_phone_number_per_hour", default: defaults.codesPerPhoneNumber, range: 1...100)
        )
        let provisioningDefaults = ProvisioningConfiguration()
        let provisioning = ProvisioningConfiguration(
            endpoint: endpoint(&reader, "registration.provisioning"),
            maximumAttempts: reader.int("registration.provisioning.max_attempts", default: provisioningDefaults.maximumAttempts, range: 1...100),
            retryBaseSeconds: Double(
                reader.int("registration.provisioning.retry_base_seconds", default: Int(provisioningDefaults.retryBaseSeconds), range: 1...3600)),
            pollSeconds: Double(reader.int("registration.provisioning.poll_seconds", default: Int(provisioningDefaults.pollSeconds), range: 1...3600))
        )
        return RegistrationConfiguration(
            codeSender: kind, codeSenderEndpoint: sender, rules: rules, provisioning: provisioning,
            pinBcryptCost: reader.int("registration.pin_bcrypt_cost", default: RegistrationConfiguration().pinBcryptCost, range: 10...16),
            enabled: reader.bool("registration.enabled", default: true),
            requiredRoles: reader.stringList("registration.required_roles", default: []),
            requiredGroups: reader.stringList("registration.required_groups", default: []),
            registeredClaim: reader.optionalString("registration.registered_claim"),
            registeredLanding: reader.string("registration.registered_landing", default: RegistrationConfiguration.defaultRegisteredLanding),
            chat: readChat(&reader)
        )
    }

    /// `features.*`: the app behind each chat feature's tab, either its slug (`"features.chats": "team-chat"`) or an
    /// object with the slug as `app` and who the feature is for (`required_roles`, `required_groups`).
    func readFeatures(_ reader: inout ConfigurationReader, demoApps: FeaturesConfiguration?) -> FeaturesConfiguration {
        var features = FeaturesConfiguration()
        for tab in [FeatureTab.chats, .calls, .stories] {
            let key = "features.\(tab.rawValue)"
            let slug = reader.optionalString(key) ?? reader.optionalString(key + ".app") ?? demoApps?.slug(for: tab)
            switch tab {
            case .chats: features.chats = slug
            case .calls: features.calls = slug
            case .stories: features.stories = slug
            case .webApps: break
            }
            let audience = FeatureAudience(
                requiredRoles: reader.stringList(key + ".required_roles", default: []),
                requiredGroups: reader.stringList(key + ".required_groups", default: []))
            if audience != FeatureAudience() { features.audiences[tab] = audience }
        }
        return features
    }

    /// `chat.*`: the homeserver the upgrade makes accounts on. The admin token comes from `chat.admin_token_file` or
    /// `GATEHOUSE_CHAT_ADMIN_TOKEN` (`_FILE`), never from the configuration file itself.
    func readChat(_ reader: inout ConfigurationReader) -> ChatConfiguration {
        let defaults = ChatConfiguration()
        let backendText = reader.string("chat.backend", default: defaults.backend.rawValue)
        guard let backend = ChatConfiguration.Backend(rawValue: backendText) else {
            reader.report(
                "chat.backend", "must be one of \(ChatConfiguration.Backend.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(backendText)\"")
            return defaults
        }
        let token = (reader.text(ofFileNamedBy: "chat.admin_token_file") ?? reader.secret("chat.admin_token"))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let jwtSecret = (reader.text(ofFileNamedBy: "chat.jwt_secret_file") ?? reader.secret("chat.jwt_secret"))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var chat = ChatConfiguration(
            backend: backend, serverName: reader.optionalString("chat.server_name"), adminToken: token?.isEmpty == false ? token : nil,
            authProvider: reader.string("chat.auth_provider", default: defaults.authProvider),
            timeoutSeconds: reader.int("chat.timeout_seconds", default: defaults.timeoutSeconds, range: 1...120),
            tls: Self.readServiceTLS(&reader, "chat"), jwtSecret: jwtSecret?.isEmpty == false ? jwtSecret : nil)
        for text in reader.stringList("chat.calls.candidate_networks", default: []) {
            if let network = IPNetwork(text) {
                chat.callNetworks.append(network)
            } else {
                reader.report("chat.calls.candidate_networks", "must be address blocks (192.0.2.0/24, 2001:db8::/32), got \"\(text)\"")
            }
        }
        chat.callsRelayOnly = reader.bool("chat.calls.relay_only", default: false)
        chat.storyLifetime = TimeInterval(reader.int("chat.stories.lifetime_hours", default: 24, range: 1...168) * 3600)
        chat.push = readPush(&reader)
        if let secret = chat.jwtSecret, secret.utf8.count < 32 {
            reader.report("chat.jwt_secret_file", "must hold at least 32 characters (the homeserver's jwt_config secret), got \(secret.utf8.count)")
        }
        if let text = reader.optionalString("chat.homeserver_url") {
            if let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host?.isEmpty == false,
                scheme == "https" || (scheme == "http" && GatehouseConfiguration.isLoopback(url.host))
            {
                chat.homeserverURL = url
            } else {
                reader.report("chat.homeserver_url", "must be the homeserver's https URL (http only for a loopback host), got \"\(text)\"")
            }
        }
        guard backend == .synapse else { return chat }
        if reader.optionalString("chat.homeserver_url") == nil { reader.report("chat.homeserver_url", "is required for the synapse backend") }
        if chat.serverName?.isEmpty != false {
            reader.report("chat.server_name", "is required for the synapse backend: the homeserver's server_name, as in @alice:server_name")
        }
        if chat.adminToken == nil {
            reader.report(
                "chat.admin_token_file",
                "is required for the synapse backend: a file holding a homeserver admin's access token (or set GATEHOUSE_CHAT_ADMIN_TOKEN)")
        }
        if chat.authProvider.isEmpty || !chat.authProvider.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._~-".contains($0)) }) {
            reader.report("chat.auth_provider", "must be the idp_id of the homeserver's OIDC provider entry (letters, digits, . _ ~ -)")
        }
        return chat
    }

    /// `chat.push.*`: the push gateway's URL must have the path the homeserver insists on; the services are origins.
    func readPush(_ reader: inout ConfigurationReader) -> PushConfiguration {
        var push = PushConfiguration()
        push.enabled = reader.bool("chat.push.enabled", default: true)
        if let text = reader.optionalString("chat.push.gateway_url") {
            if let url = URLComponents(string: text), ["http", "https"].contains(url.scheme?.lowercased()), url.host?.isEmpty == false,
                url.path == Paths.pushGateway, url.query == nil
            {
                push.gatewayURL = text
            } else {
                reader.report("chat.push.gateway_url", "must be the gateway's URL as the homeserver reaches it, ending in \(Paths.pushGateway), got \"\(text)\"")
            }
        }
        let services = reader.stringList("chat.push.services", default: PushServices.browsers)
        if let parsed = PushServices(services) {
            push.services = parsed
        } else {
            reader.report("chat.push.services", "must be origins (https://fcm.googleapis.com, https://*.notify.windows.com), got \(services)")
        }
        if let contact = reader.optionalString("chat.push.contact") {
            if contact.hasPrefix("mailto:") || contact.hasPrefix("https://") {
                push.contact = contact
            } else {
                reader.report("chat.push.contact", "must be a mailto: or https: URL, got \"\(contact)\"")
            }
        }
        return push
    }

    /// `<prefix>.url`, `.authorization_header`, `.authorization` (a secret) and `.timeout_seconds`; `nil` without a URL.
    func endpoint(_ reader: inout ConfigurationReader, _ prefix: String) -> HTTPEndpointConfiguration? {
        let header = reader.string("\(prefix).authorization_header", default: HTTPEndpointConfiguration.defaultAuthorizationHeader)
        let authorization = reader.secret("\(prefix).authorization")
        let timeout = reader.int("\(prefix).timeout_seconds", default: HTTPEndpointConfiguration.defaultTimeoutSeconds, range: 1...120)
        guard let text = reader.optionalString("\(prefix).url") else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host?.isEmpty == false,
            scheme == "https" || (scheme == "http" && GatehouseConfiguration.isLoopback(url.host))
        else {
            reader.report("\(prefix).url", "must be an https URL (http only for a loopback host), got \"\(text)\"")
            return nil
        }
        return HTTPEndpointConfiguration(
            url: url, authorizationHeader: header, authorization: authorization, timeoutSeconds: timeout, tls: Self.readServiceTLS(&reader, prefix))
    }
}
