import NIOHTTP1

/// The order of one member connection's requests, as a value: `DataPlaneHandler` tells it what arrived and what
/// ended, and does what it answers. Which request goes where is the gateway's (`DataPlaneRoutes`); when it may go,
/// and where the parts after its head go, is this machine's, tested alone (`MemberConnectionStateMachineTests`).
///
/// HTTP/1.1 answers are never reordered: a request for the data plane waits until the application has answered
/// every request handed to it before, a request after one the data plane took waits until that answer is complete,
/// and a WebSocket upgrade waits for both and is decided once it is complete.
struct MemberConnectionStateMachine {
    /// Where the body and end of the request being read go.
    enum Reading: Equatable {
        case nothing
        case application
        /// The data plane's exchange (dropped if it already ended: the app answered before reading it all).
        case exchange
        /// An upgrade request: its body is nobody's, its end has it decided.
        case upgrade(RequestHead)
    }

    /// What a request's head calls for.
    enum HeadStep: Equatable {
        /// An earlier answer is under way: the head waits (and the connection is not read further).
        case wait
        /// The gateway routes it (`toApplication` or `toExchange`).
        case route
        /// A WebSocket upgrade, decided once the request is complete.
        case upgrade
    }

    /// Where a body part or a request's end goes.
    enum PartStep: Equatable {
        case application
        case exchange
        case decideUpgrade(RequestHead)
        case drop
    }

    /// What the end of an answer of the application's calls for.
    enum ApplicationEndStep: Equatable {
        case none
        /// The connection closes once the answer is out (after a refused upgrade).
        case close
        /// The application owes nothing: requests that waited are taken.
        case serveWaiting
    }

    /// What the end of the data plane's exchange calls for.
    enum ExchangeEndStep: Equatable {
        /// The connection cannot carry another request.
        case close
        /// Requests that waited are taken, after a shutdown's quiesce event held meanwhile (`releaseQuiesce`).
        case serveWaiting(releaseQuiesce: Bool)
    }

    /// Requests handed to the application whose answers have not ended.
    private(set) var applicationAnswersOwed = 0
    private(set) var reading = Reading.nothing
    /// A data plane exchange is under way (from its head to its answer's end).
    private(set) var exchangeUnderWay = false
    /// An upgrade request is being read or decided: nothing after it is taken until the decision.
    private(set) var upgrading = false
    /// The connection is the tunnel's: the handler is out of the pipeline.
    private(set) var handedOver = false
    /// The application answers a refused upgrade: the connection closes after that answer.
    private(set) var closesAfterApplicationAnswers = false
    private(set) var isClosed = false
    /// A read the server asked for, not passed on yet.
    private var readHeld = false
    /// A shutdown's quiesce event, held while an answer of the data plane's or an upgrade is under way.
    private var heldQuiesce = false

    // MARK: - Requests

    mutating func head(_ head: RequestHead, isUpgrade: Bool) -> HeadStep {
        guard !exchangeUnderWay, !upgrading, !isClosed else { return .wait }
        guard isUpgrade else { return .route }
        guard applicationAnswersOwed == 0 else { return .wait }
        upgrading = true
        reading = .upgrade(head)
        return .upgrade
    }

    /// The gateway gave the request to the application: it goes on at once (the application answers in order).
    mutating func toApplication() {
        reading = .application
        applicationAnswersOwed += 1
    }

    /// The gateway gave the request to the data plane: `false` while the application still owes answers (the head
    /// waits, and is routed again then: the session may have changed by then).
    mutating func toExchange() -> Bool {
        guard applicationAnswersOwed == 0 else { return false }
        reading = .exchange
        exchangeUnderWay = true
        return true
    }

    func body() -> PartStep {
        switch reading {
        case .application: .application
        case .exchange: .exchange
        case .upgrade, .nothing: .drop
        }
    }

    mutating func end() -> PartStep {
        defer { reading = .nothing }
        switch reading {
        case .application: return .application
        case .exchange: return .exchange
        case .upgrade(let head): return .decideUpgrade(head)
        case .nothing: return .drop
        }
    }

    // MARK: - Answers

    mutating func applicationAnswerEnded() -> ApplicationEndStep {
        applicationAnswersOwed -= 1
        guard applicationAnswersOwed == 0 else { return .none }
        return closesAfterApplicationAnswers ? .close : .serveWaiting
    }

    mutating func exchangeEnded(closeMember: Bool) -> ExchangeEndStep {
        exchangeUnderWay = false
        if closeMember {
            isClosed = true
            return .close
        }
        return .serveWaiting(releaseQuiesce: takeHeldQuiesce())
    }

    /// The upgrade became a tunnel.
    mutating func handOver() {
        handedOver = true
    }

    /// The upgrade was refused: it goes to the application as a plain request, and the connection closes after its
    /// answer. `nil` when the member already left; else whether a held quiesce event goes on now.
    mutating func upgradeToApplication() -> Bool? {
        upgrading = false
        guard !isClosed else { return nil }
        closesAfterApplicationAnswers = true
        applicationAnswersOwed += 1
        return takeHeldQuiesce()
    }

    // MARK: - The connection

    /// A shutdown's quiesce event: `true` when it is held (an answer of the data plane's or an upgrade is under way,
    /// which the application knows nothing of).
    mutating func quiesce() -> Bool {
        guard exchangeUnderWay || upgrading else { return false }
        heldQuiesce = true
        return true
    }

    private mutating func takeHeldQuiesce() -> Bool {
        defer { heldQuiesce = false }
        return heldQuiesce
    }

    mutating func memberGone() {
        isClosed = true
    }

    /// The server asks for a read: `true` to read now; else it is held until nothing waits (`partsWaiting`), no
    /// upgrade is being decided and the exchange takes the member's body (`exchangeHoldsReads`).
    mutating func read(partsWaiting: Bool, exchangeHoldsReads: Bool) -> Bool {
        guard partsWaiting || upgrading || exchangeHoldsReads else { return true }
        readHeld = true
        return false
    }

    /// The exchange's app connection takes the member's body again: `true` to read the held read now.
    mutating func resumeReads(partsWaiting: Bool, exchangeHoldsReads: Bool) -> Bool {
        guard readHeld, !partsWaiting, !upgrading, !handedOver, !exchangeHoldsReads else { return false }
        readHeld = false
        return true
    }

    /// Every waiting part was taken: `true` to read the held read now.
    mutating func waitingServed() -> Bool {
        guard readHeld, !handedOver else { return false }
        readHeld = false
        return true
    }
}
