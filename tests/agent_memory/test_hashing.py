from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.hashing import (
    casefolded_content_hash,
    content_hash,
    erasure_hashes,
    fold_compat,
    fold_skeleton,
    fold_whitespace,
    folded_content_hash,
    mint_token,
    new_memory_id,
    new_memory_ids,
    skeleton_content_hash,
)
from meta_memory.injection.defang import neutralise
from meta_memory.textfold import is_invisible, strip_controls, strip_invisible


def test_content_hash_is_stable_and_boundary_safe() -> None:
    h = content_hash("title", "body")
    assert len(h) == 64 and re.fullmatch(r"[0-9a-f]{64}", h)
    assert content_hash("title", "body") == h
    assert content_hash("ab", "c") != content_hash("a", "bc")
    # pinned: SHA-256 over u64le(5) + b"title" + b"body"
    import hashlib

    assert h == hashlib.sha256((5).to_bytes(8, "little") + b"titlebody").hexdigest()


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@given(st.text(), st.text(), st.text(), st.text())
def test_content_hash_distinguishes_distinct_pairs(t1: str, b1: str, t2: str, b2: str) -> None:
    if (_nfc(t1), _nfc(b1)) != (_nfc(t2), _nfc(b2)):
        assert content_hash(t1, b1) != content_hash(t2, b2)


def test_canonically_equal_texts_hash_alike() -> None:
    assert content_hash("Café", "Noël") == content_hash("Cafe\u0301", "Noe\u0308l")
    assert content_hash("Café", "x") != content_hash("Cafe", "x")  # an accent is a visible difference
    # NFC is canonical equivalence only: compatibility forms (full width, ligatures) stay distinct
    assert content_hash("ﬁle", "x") != content_hash("file", "x")


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text())
def test_any_text_and_its_decomposed_form_hash_alike(title: str, body: str) -> None:
    forms = {(unicodedata.normalize(f, title), unicodedata.normalize(f, body)) for f in ("NFC", "NFD")}
    assert len({content_hash(t, b) for t, b in forms}) == 1
    assert len({erasure_hashes(t, b) for t, b in forms}) == 1
    assert content_hash(title, body) == content_hash(_nfc(title), _nfc(body))


_ID = re.compile(r"mem-(\d+)-([0-9a-f]+)-([0-9a-f]{16})")


def _fnv1a64(data: bytes) -> int:
    """FNV-1a 64 as ids once carried it (the attacker's guess function)."""
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & ((1 << 64) - 1)
    return h


def test_memory_ids_are_unique_and_keep_their_shape() -> None:
    ids = [new_memory_id() for _ in range(1024)] + new_memory_ids(1024)
    assert len(set(ids)) == 2048
    assert all(_ID.fullmatch(i) for i in ids)
    assert new_memory_ids(0) == [] and len(new_memory_ids(1)) == 1


def test_the_nonces_of_a_batch_are_random_bits() -> None:
    """The last component is 64 random bits: over 4096 ids every hex digit position takes each of the
    16 values, and no two nonces repeat (a counter or a content function would fail one or the other)."""
    nonces = [_ID.fullmatch(i).group(3) for i in new_memory_ids(4096)]  # type: ignore[union-attr]
    assert len(set(nonces)) == len(nonces)
    for pos in range(16):
        assert len({n[pos] for n in nonces}) == 16


@settings(max_examples=200)
@given(st.text(max_size=40), st.text(max_size=200))
def test_an_id_is_no_function_of_content(title: str, body: str) -> None:
    """Whatever the content, the id's nonce is not its FNV-1a (nor any fixed function of it): the
    minting functions take no content at all, and two mints differ in the nonce."""
    guess = f"{_fnv1a64(title.encode('utf-8', 'surrogatepass') + body.encode('utf-8', 'surrogatepass')):016x}"
    a, b = new_memory_id(), new_memory_ids(2)[1]
    assert not a.endswith(guess) and not b.endswith(guess)
    assert a.rsplit("-", 1)[1] != b.rsplit("-", 1)[1]


def test_mint_token_shape() -> None:
    a, b = mint_token("stage"), mint_token("stage")
    assert a != b
    assert re.fullmatch(r"stage-\d+-[0-9a-f]+-[0-9a-f]{8}", a)


def test_ids_count_nothing_and_keep_their_order() -> None:
    """No component of an id or token counts the mints before it (a process-wide counter told one
    identity how many records, stages or proposals the others made in between): apart from the pid, the
    parts are the clock and random bits. A process's ids still come in increasing clock order."""
    ids = new_memory_ids(256) + [new_memory_id() for _ in range(256)]
    parts = [_ID.fullmatch(i) for i in ids]
    assert all(parts)
    clocks = [int(m.group(1)) for m in parts if m]
    assert clocks == sorted(clocks) and len(set(clocks)) == len(clocks)
    tokens = [mint_token("prop").rsplit("-", 1)[1] for _ in range(256)]
    steps = {int(b, 16) - int(a, 16) for a, b in zip(tokens, tokens[1:])}
    assert len(steps) > 200  # random, not consecutive


#: Every character Python's ``str.split`` splits on (the fold's whitespace), the no-break space among them, and
#: the controls that separate words (vertical tab, form feed, U+001C-U+001F), which the renderers show as a space.
WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
#: words of visible characters (an invisible character is dropped by the fold: see the test below)
_words = st.lists(st.text(st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc")), min_size=1)
                  .filter(lambda w: not any(is_invisible(c) for c in w)), max_size=8)
_runs = st.text(st.sampled_from(WHITESPACE), min_size=1, max_size=4)


def test_the_fold_takes_the_unicode_spaces() -> None:
    assert "\u00a0" in WHITESPACE and "\u3000" in WHITESPACE and "\t" in WHITESPACE
    assert fold_whitespace(" a \u00a0 b\t\r\nc\u2003 ") == "a b c"
    assert folded_content_hash("T", "a  b") == folded_content_hash("T", "a\u00a0b") == content_hash("T", "a b")


@given(st.text(), st.text())
def test_folding_is_idempotent(title: str, body: str) -> None:
    once = fold_whitespace(body)
    assert fold_whitespace(once) == once and " " * 2 not in once and once == once.strip()
    folded = folded_content_hash(title, body)
    assert folded_content_hash(fold_whitespace(title), once) == folded
    assert folded_content_hash(title, body, content_hash(title, body)) == folded  # the shortcut changes nothing


@given(st.text(), _words, st.data())
def test_the_folded_hash_ignores_whitespace(title: str, words: list[str], data: st.DataObject) -> None:
    """Any spacing of the same words (runs of any Unicode whitespace between them, at either end) folds alike."""
    seps = data.draw(st.lists(_runs, min_size=len(words) + 1, max_size=len(words) + 1))
    ends = data.draw(st.tuples(st.booleans(), st.booleans()))
    spaced = "".join(sep + word for sep, word in zip(seps, words, strict=False)) + (seps[-1] if ends[1] else "")
    spaced = spaced if ends[0] or not words else spaced[len(seps[0]):]
    assert fold_whitespace(spaced) == " ".join(words)
    assert folded_content_hash(title, spaced) == folded_content_hash(title, " ".join(words))


@given(st.text(), st.text(), st.text())
def test_the_folded_hash_tells_different_words_apart(title: str, a: str, b: str) -> None:
    """Two bodies share a folded hash exactly when their visible non-whitespace text, word by word, is the same
    (invisible characters, such as a zero-width space or a variation selector, and the controls every renderer
    removes, such as a bell, an escape or a form feed, are dropped first)."""
    def visible(text: str) -> list[str]:
        return strip_invisible(strip_controls(text)).split()

    assert (folded_content_hash(title, a) == folded_content_hash(title, b)) == (visible(a) == visible(b))
    assert (folded_content_hash(title, a) == folded_content_hash(title + "x", a)) is False


@given(st.text(), _words, st.lists(st.sampled_from(["\u200b", "\u200d", "\u2060", "\u00ad", "\ufe0f", "\U000e0100",
                                                   "\x00", "\x07", "\x08", "\x0e", "\x1b", "\x7f", "\x80",
                                                   "\x9f"]),
                                  min_size=1, max_size=4), st.data())
def test_the_folded_hash_ignores_invisible_characters(title: str, words: list[str], hidden: list[str],
                                                      data: st.DataObject) -> None:
    """Erased content sent again with invisible characters or controls (a bell, an escape, a shift out, DEL, a
    C1 control) slipped in folds to the same hash, in both folds."""
    body = " ".join(words)
    at = sorted(data.draw(st.lists(st.integers(0, len(body)), min_size=len(hidden), max_size=len(hidden))))
    slipped = body
    for pos, ch in reversed(list(zip(at, hidden))):
        slipped = slipped[:pos] + ch + slipped[pos:]
    assert folded_content_hash(title, slipped) == folded_content_hash(title, body)
    assert casefolded_content_hash(title, slipped) == casefolded_content_hash(title, body)


def test_a_control_that_separates_words_is_a_space_to_both_folds() -> None:
    """A vertical tab, a form feed or U+001C-U+001F in place of a space is that space (the renderers show one):
    erased ``"the bank pin"`` sent again as ``"the\\x0cbank\\x1fpin"`` folds alike; inside a word it splits it."""
    for sep in "\x0b\x0c\x1c\x1d\x1e\x1f":
        assert fold_whitespace(f"the{sep}bank pin") == "the bank pin"
        assert folded_content_hash("T", f"the{sep}bank{sep}pin") == folded_content_hash("T", "the bank pin")
        assert casefolded_content_hash("T", f"THE{sep}bank pin") == casefolded_content_hash("T", "the bank pin")
        assert folded_content_hash("T", f"ba{sep}nk") != folded_content_hash("T", "bank")


def test_a_blank_filler_in_place_of_a_space_is_that_space_to_both_folds_and_the_renderers() -> None:
    """A Hangul filler or the braille blank shows as blank space: in place of a space it is that space to the
    renderers and both folds (never a deleted character that runs two words together)."""
    for blank in "\u3164\uffa0\u2800":
        assert neutralise(f"the{blank}vault code") == "the vault code"
        assert fold_whitespace(f"the{blank}vault code") == "the vault code"
        assert folded_content_hash("T", f"the{blank}vault code") == folded_content_hash("T", "the vault code")
        assert casefolded_content_hash("T", f"THE{blank}vault code") == casefolded_content_hash("T", "the vault code")


_shown = st.text(st.sampled_from("ab Z\t\n\r\x00\x07\x0b\x0c\x1b\x1c\x1f\x7f\x85\x9b\u00a0\u200b\u3164\uffa0\u2800"),
                 max_size=24)


@given(_shown)
def test_both_folds_read_a_text_as_the_renderers_show_it(text: str) -> None:
    """What a renderer shows the model (``neutralise``) folds as the text itself does, in both folds: content
    that differs from erased content only by controls or invisible characters cannot render as it."""
    shown = neutralise(text)
    assert fold_whitespace(shown) == fold_whitespace(text)
    assert fold_compat(shown) == fold_compat(text)


# ----------------------------------------------------------------------------- fold 2: compatibility forms and case

def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@settings(max_examples=400)
@given(st.text(), st.text())
def test_fold_compat_is_idempotent_and_folds_what_fold_1_folds(title: str, body: str) -> None:
    for text in (title, body):
        folded = fold_compat(text)
        assert fold_compat(folded) == folded
        assert fold_compat(fold_whitespace(text)) == folded
    h = casefolded_content_hash(title, body)
    assert casefolded_content_hash(fold_compat(title), fold_compat(body)) == h
    assert casefolded_content_hash(*(fold_whitespace(t) for t in (title, body))) == h
    assert casefolded_content_hash(title, body, content_hash(title, body)) == h


_WORDS = st.lists(st.text(st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=1, max_size=12),
                  min_size=1, max_size=6)


@settings(max_examples=300)
@given(_WORDS, st.data())
def test_case_width_and_spacing_variants_fold_alike(words: list[str], data: st.DataObject) -> None:
    text = " ".join(words)
    variant = "".join(data.draw(st.sampled_from([c, c.upper(), c.lower(), _full_width(c)])) for c in text)
    variant = variant.replace(" ", data.draw(st.sampled_from([" ", "  ", "\t", "\u00a0", "\u3000", " \u200b"])))
    assert fold_compat(variant) == fold_compat(text)
    assert casefolded_content_hash(variant, variant) == casefolded_content_hash(text, text)
    assert erasure_hashes(text, text)[2] == erasure_hashes(variant, variant)[2]


@settings(max_examples=300)
@given(st.text(min_size=1), st.text(min_size=1))
def test_fold_compat_tells_different_lower_case_words_apart(a: str, b: str) -> None:
    """Text that NFKC and case folding leave as it is folds to itself: different such texts stay apart."""
    a, b = fold_compat(a), fold_compat(b)
    if a != b:
        assert casefolded_content_hash("t", a) != casefolded_content_hash("t", b)


def test_fold_compat_examples() -> None:
    assert fold_compat("Erase Me Plan") == fold_compat("ＥＲＡＳＥ\u3000ｍｅ plan") == "erase me plan"
    assert fold_compat("ﬁne Straße") == "fine strasse"  # a ligature, the German sharp s
    assert fold_compat("\U0001d41b\U0001d425\U0001d42e\U0001d41e") == "blue"  # mathematical bold letters
    assert fold_compat("café") == fold_compat("cafe\u0301") != fold_compat("cafe")  # accents stay


@settings(max_examples=300)
@given(st.text(), st.text())
def test_erasure_hashes_are_the_four_hashes(title: str, body: str) -> None:
    assert erasure_hashes(title, body) == (content_hash(title, body), folded_content_hash(title, body),
                                           casefolded_content_hash(title, body), skeleton_content_hash(title, body))


#: Letters of other scripts a reader (and a model) takes for a Latin letter, with that letter: fold 3 reads
#: each as it (Unicode's confusables prototypes, ASCII read as itself).
LOOK_ALIKES = {
    "\u0430": "a", "\u043e": "o", "\u0435": "e", "\u0440": "p", "\u0441": "c", "\u0445": "x", "\u0443": "y",
    "\u0456": "i", "\u0458": "j", "\u0455": "s", "\u0501": "d", "\u04bb": "h", "\u051b": "q", "\u051d": "w",
    "\u03bf": "o", "\u03b1": "a", "\u03c1": "p", "\u03bd": "v", "\u03c5": "u", "\u03b9": "i",
    "\u0410": "A", "\u0412": "B", "\u0415": "E", "\u041a": "K", "\u041c": "M", "\u041d": "H", "\u041e": "O",
    "\u0420": "P", "\u0421": "C", "\u0422": "T", "\u0425": "X", "\u0406": "I", "\u0405": "S",
    "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u0399": "I", "\u039a": "K",
    "\u039c": "M", "\u039d": "N", "\u039f": "O", "\u03a1": "P", "\u03a4": "T", "\u03a5": "Y", "\u03a7": "X",
}


def test_each_listed_look_alike_folds_to_its_latin_letter() -> None:
    for char, latin in LOOK_ALIKES.items():
        assert fold_skeleton(char) == fold_skeleton(latin) == latin.lower(), (char, latin, fold_skeleton(char))
    assert fold_skeleton("p\u0430yp\u0430l") == fold_skeleton("PayPal") == "paypal"
    assert fold_skeleton("\u03a1\u0391\u03a5\u03a1\u0391L") == "paypal"  # Greek capitals
    assert fold_skeleton("c\u0430fe\u0301") == fold_skeleton("caf\u00e9") == "caf\u00e9"  # accents stay
    assert fold_skeleton("\u0451") == fold_skeleton("\u00eb")  # a Cyrillic letter with a mark, decomposed first
    # ASCII is never mapped: 0 and O, 1 and l, rn and m stay apart; ASCII text folds as fold 2 folds it
    assert len({fold_skeleton(t) for t in ("0", "o", "1", "l", "rn", "m")}) == 6
    assert fold_skeleton("Erase  ME") == fold_skeleton("erase\u200bme") == fold_skeleton("e r a s e\nme") == "eraseme"
    # other words stay other words, in either script
    assert fold_skeleton("bluebird") != fold_skeleton("redbird")
    assert fold_skeleton("\u0432\u043e\u0434\u0430") != fold_skeleton("\u0432\u0438\u043d\u043e")


@settings(max_examples=500)
@given(st.text())
def test_fold_skeleton_is_idempotent(text: str) -> None:
    folded = fold_skeleton(text)
    assert fold_skeleton(folded) == folded
    assert fold_skeleton(fold_whitespace(text)) == folded


_LATIN_WORDS = st.lists(st.text(st.sampled_from(sorted(set("".join(LOOK_ALIKES.values())) | set("fglmnrtz"))),
                                min_size=1, max_size=12), min_size=1, max_size=6)


@settings(max_examples=300)
@given(_LATIN_WORDS, st.data())
def test_look_alike_spellings_fold_alike(words: list[str], data: st.DataObject) -> None:
    """Any letters of a Latin text swapped for listed look-alikes (and its case and spacing changed) fold as
    the text does, and its fold-3 hash is the text's (the erasure register's match)."""
    text = " ".join(words)
    swaps: dict[str, list[str]] = {}
    for char, latin in LOOK_ALIKES.items():
        swaps.setdefault(latin, []).append(char)
    variant = "".join(data.draw(st.sampled_from([c, *swaps.get(c, ())])) for c in text)
    variant = variant.replace(" ", data.draw(st.sampled_from([" ", "  ", "\u00a0", " \u200b", "", "\u200b", "\n"])))
    assert fold_skeleton(variant) == fold_skeleton(text) == "".join(text.lower().split())
    assert erasure_hashes(variant, variant)[3] == erasure_hashes(text, text)[3]


def test_fold_3_reads_words_run_together_or_letter_spaced_as_the_same_letters() -> None:
    """Whitespace taken out between words or put into a word (a zero-width space in place of a space, which the
    renderers drop) is the same content to fold 3; the other folds keep words apart."""
    text = "the launch code for project nightingale"
    for variant in ("thelaunchcodeforprojectnightingale", " ".join(text), text.replace(" ", "\u200b"),
                    text.replace("nightingale", "night\ningale"), text.upper().replace(" ", "\u2060")):
        assert erasure_hashes("T", variant)[3] == erasure_hashes("t", text)[3], variant
        assert skeleton_content_hash("T", variant) == skeleton_content_hash("T", text)
    assert erasure_hashes("T", "thelaunchcode")[2] != erasure_hashes("T", "the launch code")[2]
    assert erasure_hashes("T", "the launch code")[3] != erasure_hashes("T", "the lunch code")[3]
