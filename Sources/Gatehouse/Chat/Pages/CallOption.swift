/// How a call starts (product §6); the call app receives the choice as query parameters.
enum CallOption: String, CaseIterable {
    case audio
    case video

    var parameters: [(String, String)] {
        switch self {
        case .audio: [("call", "audio"), ("camera", "off"), ("microphone", "on"), ("audio_output", "earpiece")]
        case .video: [("call", "video"), ("camera", "on"), ("microphone", "on"), ("audio_output", "speaker")]
        }
    }
}
