import Foundation
import GatehouseCore
import Hummingbird
import Logging

/// Steps 1 and 2: the phone number, and the verification code sent to it.
extension RegistrationController {
    func submitPhone(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.phone, request, context) { flow, form in
            let entered = form["phone"] ?? ""
            switch PhoneNumber.parse(entered) {
            case .failure(let problem):
                return try phonePage(flow, context, entered: entered, error: strings["upgrade_phone_error_\(problem.rawValue)"])
            case .success(let number):
                var flow = flow
                if let refusal = try await sendCode(&flow, to: number, context) {
                    return try phonePage(flow, context, entered: entered, error: refusal)
                }
                return redirect(Paths.upgrade(.code))
            }
        }
    }

    func resend(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.code, request, context) { flow, _ in
            guard let number = flow.phoneNumber else { return redirect(Paths.upgrade(.phone)) }
            var flow = flow
            if let refusal = try await sendCode(&flow, to: number, context) {
                return try codePage(flow, context, errors: [FieldError("resend-code", refusal)])
            }
            return redirect(FormEncoding.url(Paths.upgrade(.code), adding: [("resent", "1")]))
        }
    }

    /// Issues, sends and records a new code, or says why not (resend window, rate limits, the sender failing).
    func sendCode(_ flow: inout RegistrationFlow, to number: PhoneNumber, _ context: SignedInRequestContext) async throws -> String? {
        let now = now()
        let sub = context.session.identity.sub
        if flow.step == .code, let pending = flow.code, now < pending.resendAvailableAt(rules: rules) {
            let seconds = Int(pending.resendAvailableAt(rules: rules).timeIntervalSince(now).rounded(.up))
            return strings.text("upgrade_phone_error_wait", ["seconds": "\(seconds)"])
        }
        let reservation = try await flows.reserveCodeSend(
            sub: sub, phoneNumber: number, at: now, since: now.addingTimeInterval(-rules.rateWindow), perMember: rules.codesPerMember,
            perPhoneNumber: rules.codesPerPhoneNumber)
        let sendID: Int
        switch reservation {
        case .success(let id):
            sendID = id
        case .failure(.memberLimit):
            metrics.codeRateLimited(limit: "member")
            context.logger.notice("code refused: member limit", metadata: ["sub": .string(sub)])
            return strings["upgrade_phone_error_member_limit"]
        case .failure(.phoneNumberLimit):
            metrics.codeRateLimited(limit: "phone_number")
            context.logger.notice("code refused: phone number limit", metadata: ["sub": .string(sub)])
            return strings["upgrade_phone_error_number_limit"]
        }
        let (code, pending) = PendingCode.issue(now: now, rules: rules)
        let message = VerificationMessage(
            sub: sub, phoneNumber: number, code: code, text: strings.text("code_message", ["code": code]), expiresAt: pending.expiresAt)
        do {
            try await sender.send(message)
        } catch {
            metrics.counter("gatehouse_verification_code_send_failures_total").increment()
            context.logger.error("verification code not sent", metadata: ["sub": .string(sub), "error": .string("\(error)")])
            try await flows.releaseCodeSend(id: sendID)
            return strings["upgrade_phone_error_send_failed"]
        }
        metrics.counter("gatehouse_verification_codes_sent_total").increment()
        try flow.codeSent(to: number, code: pending, now: now)
        try await flows.save(flow)
        return nil
    }

    func submitCode(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.code, request, context) { flow, form in
            var flow = flow
            let entered = form["code"] ?? ""
            let (now, sub) = (now(), flow.sub)
            let key = flow.attemptsKey
            let result = try await flow.verify(entered, now: now, rules: rules) { _ in
                try await flows.claimCodeAttempt(flowKey: key, sub: sub, maximum: rules.maximumWrongTries, at: now)
            }
            switch result {
            case .accepted:
                try await flows.save(flow)
                return redirect(Paths.upgrade(.username))
            case .burned:
                return await fail(flow.sub, reason: "code_attempts_exhausted", context)
            case .wrong, .expired, .malformed:
                // Nothing to write back: the try was counted in the store, and the flow itself did not change.
                return try codePage(flow, context, entered: entered, errors: [FieldError("code", codeError(result))])
            }
        }
    }

    /// What the member is told of a code that was not taken (a wrong, expired or malformed entry).
    func codeError(_ result: CodeCheck) -> String {
        switch result {
        case .wrong(let remaining):
            remaining == 1 ? strings["upgrade_code_error_wrong_one"] : strings.text("upgrade_code_error_wrong", ["remaining": "\(remaining)"])
        case .expired: strings["upgrade_code_error_expired"]
        // Accepted and burned codes are answered by the callers, never with a message beside the field.
        case .malformed, .accepted, .burned: strings["upgrade_code_error_malformed"]
        }
    }
}
