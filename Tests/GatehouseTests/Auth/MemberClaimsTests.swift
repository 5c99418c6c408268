import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

@Suite struct MemberClaimsTests {
    @Test func readsKeycloakShape() throws {
        let json = """
            {"sub":"abc","name":"Ada Lovelace","email":"ada@example.org","phone_number":"+15550100","preferred_username":"ada",
             "realm_access":{"roles":["user","offline_access"]},
             "resource_access":{"signal":{"roles":["chat","user"]},"other-client":{"roles":["admin"]}},
             "groups":["/staff","/staff/engineering"]}
            """
        let identity = try MemberClaims.identity(fromUserinfo: Data(json.utf8), clientID: "signal")
        #expect(identity.sub == "abc")
        #expect(identity.name == "Ada Lovelace")
        #expect(identity.phoneNumber == "+15550100")
        #expect(identity.roles == ["user", "offline_access", "chat"])  // union, this client only, no duplicates
        #expect(!identity.roles.contains("admin"))
        #expect(identity.groups == ["/staff", "/staff/engineering"])
    }

    @Test func missingOptionalClaimsAreFine() throws {
        let identity = try MemberClaims.identity(fromUserinfo: Data(#"{"sub":"only-sub"}"#.utf8), clientID: "c")
        #expect(identity == MemberIdentity(sub: "only-sub"))
        #expect(identity.displayName == "only-sub")
    }

    @Test func nameFallsBackToGivenAndFamilyName() throws {
        let identity = try MemberClaims.identity(fromUserinfo: Data(#"{"sub":"s","given_name":"Grace","family_name":"Hopper"}"#.utf8), clientID: "c")
        #expect(identity.name == "Grace Hopper")
    }

    @Test(arguments: [#"{"name":"no sub"}"#, #"{"sub":""}"#, #"{"sub":42}"#, "[]", "not json", ""])
    func rejectsInvalidUserinfo(_ json: String) {
        #expect(throws: OIDCError.self) { try MemberClaims.identity(fromUserinfo: Data(json.utf8), clientID: "c") }
    }

    @Test func wrongTypesAreIgnoredNotTrusted() throws {
        let json = #"{"sub":"s","realm_access":{"roles":"admin"},"groups":"/staff","phone_number":5}"#
        let identity = try MemberClaims.identity(fromUserinfo: Data(json.utf8), clientID: "c")
        #expect(identity.roles.isEmpty && identity.groups.isEmpty && identity.phoneNumber == nil)
    }
}
