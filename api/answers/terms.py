"""What a reader's question says, as terms the FAQ's search vectors hold.

A query is folded and split like indexed text (``api.search``): each word is kept as it is
(the ``simple`` lexeme every vector holds) and, in a language PostgreSQL stems, by its stem
(PyStemmer runs the Snowball stemmers PostgreSQL's configurations use, so ``refunds`` and the
indexed ``refund`` meet). Stopwords of that language drop out: ``how do I`` names nothing.

Typos (``Corrector``) follow Meilisearch's thresholds: a word of 5 to 8 letters may be one
edit away from a word of the org's own vocabulary (or, in English, of the embedder's
dictionary), a word of 9 or more two edits (optimal string alignment: a swap of two letters
is one edit), found with rapidfuzz; a known word is never corrected, and among equally close
words the org's own, then the most frequent, wins.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import Stemmer
from rapidfuzz import process
from rapidfuzz.distance import OSA

from api.search import RAW_WORD, config_for, fold, script_algorithm, script_stem

MAX_WORDS = 32
_WORD = re.compile(r"[a-z0-9]+")

# Stopwords of the languages stemmed by their script (``api.search.SCRIPT_STEMMERS``), which
# PostgreSQL has no list for: Arabic interrogatives, pronouns, prepositions and particles
# (written without diacritics; a query word is compared as written, diacritics dropped).
_ARABIC_STOPWORDS = """
        كيف كيفية ماذا لماذا متى أين اين هل ما من مين أي اي كم لم لن لا نعم إذا اذا إن ان أن
        في فى على إلى الى عن مع من إلي حتى بعد قبل عند لدى لدي ثم أو او و ف ب ل ك يا
        هو هي هم هن أنا انا نحن أنت انت أنتم انتم هذا هذه ذلك تلك الذي التي الذين هناك هنا
        كان كانت يكون تكون قد لقد كل بعض غير أيضا ايضا لي لك له لها لنا لهم بي بك به بها
        عليه عليها فيه فيها منه منها إليه اليه يمكن يمكنني أستطيع استطيع أريد اريد
"""
SCRIPT_STOPWORDS: dict[str, frozenset[str]] = {"arabic": frozenset(_ARABIC_STOPWORDS.split())}
# Words of a reader's question that PostgreSQL's stopword lists keep but that name nothing an
# answer is about (interrogatives, "do", "can", "want"), per language, folded: dropped from a
# query only (the index keeps them). English's list already holds its own ("how", "do").
QUERY_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(fold(words).split())
    for lang, words in {
        "fr": """comment pourquoi quand quel quelle quels quelles combien ou faire fait fais
            peux peut puis pouvez pouvons dois doit devez veux veut voudrais souhaite
            est-ce estce svp merci possible""",
        "de": """wie warum wann wo wer welche welcher welches was kann konnen muss mochte will
            bitte moglich""",
        "es": """como cuando donde cual cuales cuanto que quien puedo puede hacer quiero
            necesito debo favor posible""",
        "it": """come perche quando dove quale quali quanto posso puo fare voglio devo""",
        "pt": """como quando onde qual quais quanto posso pode fazer quero preciso devo""",
        "nl": """hoe waarom wanneer waar welke wat kan kunnen moet wil""",
    }.items()
}


def query_stopwords(locale: str | None) -> frozenset[str]:
    """``QUERY_STOPWORDS`` of ``locale``'s language (empty for the others)."""
    if not locale:
        return frozenset()
    return QUERY_STOPWORDS.get(locale.split("-")[0].lower(), frozenset())


_DIACRITICS = re.compile(r"[\u064b-\u065f\u0670\u0640]")  # harakat, dagger alef, tatweel


def script_stopword(word: str) -> bool:
    """Whether ``word`` (as written) is a stopword of its script's language."""
    algorithm = script_algorithm(word)
    if algorithm is None:
        return False
    return _DIACRITICS.sub("", word) in SCRIPT_STOPWORDS.get(algorithm, frozenset())


def script_words(text: str) -> tuple[dict[str, list[str]], frozenset[str], dict[str, str]]:
    """For the words of ``text`` in a script stemmed before folding (Arabic, Greek, ...):
    each folded token -> the folded lexemes of its word's stem, the folded tokens of the
    words that are stopwords of that language, and each token -> its word as written."""
    stems: dict[str, list[str]] = {}
    stop: set[str] = set()
    written: dict[str, str] = {}
    for raw in RAW_WORD.findall(text):
        lexemes = script_stem(raw)
        if lexemes is None:
            continue
        tokens = _WORD.findall(fold(raw))
        if script_stopword(raw):
            stop.update(tokens)
            continue
        for token in tokens:
            stems.setdefault(token, lexemes)
            written.setdefault(token, raw)
    stop.difference_update(stems)  # a token also part of a meaningful word stays
    return stems, frozenset(stop), written


# The PostgreSQL configuration's Snowball algorithm of each stemmed language (``api.search``).
_ALGORITHMS = {
    "catalan": "catalan",
    "danish": "danish",
    "german": "german",
    "english": "english",
    "spanish": "spanish",
    "basque": "basque",
    "finnish": "finnish",
    "french": "french",
    "irish": "irish",
    "hungarian": "hungarian",
    "indonesian": "indonesian",
    "italian": "italian",
    "lithuanian": "lithuanian",
    "norwegian": "norwegian",
    "dutch": "dutch",
    "portuguese": "portuguese",
    "romanian": "romanian",
    "swedish": "swedish",
    "turkish": "turkish",
}


@lru_cache(maxsize=32)
def stemmer_for(locale: str | None) -> Stemmer.Stemmer | None:
    name = config_for(locale)
    if name is None or name not in _ALGORITHMS:
        return None
    return Stemmer.Stemmer(_ALGORITHMS[name])


def words_of(text: str) -> list[str]:
    """The searchable words of ``text``, folded (``Café`` -> ``cafe``), at most MAX_WORDS."""
    return _WORD.findall(fold(text))[:MAX_WORDS]


def typo_budget(word: str) -> int:
    """Meilisearch's default: no typo under 5 letters, one from 5, two from 9."""
    if len(word) >= 9:
        return 2
    if len(word) >= 5:
        return 1
    return 0


@dataclass
class QueryTerms:
    """A query's words (after corrections and synonyms) and the lexemes that match them."""

    words: list[str]
    # What the query asks for: each meaningful word's lexeme (its stem in a stemmed language,
    # else itself) as a concept of one, and each synonym group it names as one concept whose
    # alternatives are the lexemes of all the group's members.
    concepts: list[list[str]] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    synonyms: list[str] = field(default_factory=list)

    @property
    def lexemes(self) -> list[str]:
        return list(dict.fromkeys(lexeme for concept in self.concepts for lexeme in concept))

    def text(self) -> str:
        """The query as words, corrected and with its synonyms: what is embedded."""
        return " ".join([*self.words, *self.synonyms])

    def sentence(self, typed: str) -> str:
        """``typed`` (the query as the reader wrote it) with its corrected words replaced,
        everything else as written (case, accents, stopwords, punctuation): what a model that
        reads sentences whole embeds. A word of a stemmed script is left as written (its
        correction is of its stem)."""
        if not self.corrections:
            return typed

        def fix(match: re.Match[str]) -> str:
            word = match.group(0)
            if script_algorithm(word) is not None:
                return word
            return self.corrections.get(fold(word), word)

        return RAW_WORD.sub(fix, typed)


class _Index:
    """Words by length, with their frequencies (a corrector's search space)."""

    def __init__(self, frequencies: Mapping[str, int]) -> None:
        self.frequencies = frequencies
        self.by_length: dict[int, list[str]] = {}
        for word in frequencies:
            if word.isalpha():
                self.by_length.setdefault(len(word), []).append(word)

    def closest(self, word: str, budget: int) -> list[tuple[int, int, str]]:
        """(distance, -frequency, word) of the words at most ``budget`` edits away."""
        found = []
        for length in range(len(word) - budget, len(word) + budget + 1):
            choices = self.by_length.get(length)
            if not choices:
                continue
            for candidate, distance, _index in process.extract(
                word, choices, scorer=OSA.distance, score_cutoff=budget, limit=8
            ):
                found.append((int(distance), -self.frequencies.get(candidate, 0), candidate))
        return found


@lru_cache(maxsize=1)
def english_words() -> _Index:
    """Whole English words the default embedder knows: the word tokens (``▁word``) of
    WordLlama's tokenizer, shipped in its wheel (an earlier token is a more frequent word).
    A query word a reader misspelt that the FAQ does not contain (``wnating``) is corrected
    against these, so its embedding is not noise; empty when wordllama is not installed."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return _Index({})
    folder = Path(next(iter(spec.submodule_search_locations)))
    path = folder / "tokenizers" / "l2_supercat_tokenizer_config.json"
    if not path.is_file():
        return _Index({})
    vocab: dict[str, int] = json.loads(path.read_bytes())["model"]["vocab"]
    words: dict[str, int] = {}
    for token, rank in vocab.items():
        word = token[1:].lower()
        if token.startswith("\u2581") and len(word) >= 4 and word.isascii() and word.isalpha():
            words[word] = max(words.get(word, 0), len(vocab) - rank)
    return _Index(words)


class Corrector:
    """Corrections against one org's vocabulary (``Vocabulary.frequencies``) and, for English,
    the embedder's dictionary (``english_words``): a word either knows is never corrected;
    the closest word wins, then the org's own over the dictionary's, then the most frequent."""

    def __init__(self, frequencies: dict[str, int], general: _Index | None = None) -> None:
        self._org = _Index(frequencies)
        self._general = general

    def knows(self, word: str) -> bool:
        """Whether ``word`` is a lexeme of the org's vocabulary."""
        return word in self._org.frequencies

    def correct(self, word: str, budget: int | None = None) -> str | None:
        """The word ``word`` was probably meant to be, or None (``budget``: the edits allowed,
        by default ``typo_budget(word)``)."""
        budget = typo_budget(word) if budget is None else budget
        if budget == 0 or not word.isalpha() or word in self._org.frequencies:
            return None
        if self._general is not None and word in self._general.frequencies:
            return None
        found = [(d, 0, f, w) for d, f, w in self._org.closest(word, budget)]
        if self._general is not None:
            found += [(d, 1, f, w) for d, f, w in self._general.closest(word, budget)]
        return min(found)[3] if found else None


@dataclass(frozen=True)
class SynonymIndex:
    """An org's synonym groups of one locale folded once (issue 42: 5,000 groups of 20 were
    folded again for every query, ~56 ms each, on the event loop): each group's members as
    their folded words, and which groups have a member starting with a word."""

    groups: tuple[tuple[str, ...], ...]
    by_first_word: dict[str, tuple[int, ...]]
    size: int  # bytes, about: what a cache of indexes counts
    # Words that say there is a problem, not what about (the support lexicon's
    # ``problem-words``): no concept of their own in a query that names something else.
    ignored: frozenset[str] = frozenset()
    # Every word of a member: a word the org or the lexicon names is never a typo.
    words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, groups: Sequence[Sequence[str]], ignored: Sequence[str] = ()) -> SynonymIndex:
        """``groups`` folded; ``ignored``: phrases whose words are ``ignored``."""
        folded = tuple(tuple(" ".join(words_of(member)) for member in group) for group in groups)
        starts: dict[str, list[int]] = {}
        size = 0
        for index, members in enumerate(folded):
            for member in members:
                size += len(member) + 64
                if member:
                    first = starts.setdefault(member.split(" ", 1)[0], [])
                    if not first or first[-1] != index:
                        first.append(index)
        by_first = {word: tuple(indexes) for word, indexes in starts.items()}
        dropped = frozenset(w for phrase in ignored for w in words_of(phrase))
        known = frozenset(w for members in folded for member in members for w in member.split())
        size += sum(len(w) + 64 for w in dropped | known)
        return cls(folded, by_first, size + 32 * len(by_first), dropped, known | dropped)


NO_SYNONYMS = SynonymIndex((), {}, 0)


def analyse(
    q: str,
    locale: str | None,
    stopwords: frozenset[str],
    corrector: Corrector | None,
    synonyms: SynonymIndex,
) -> QueryTerms:
    """Words, concepts, corrections and synonyms of the query ``q`` in ``locale``. A word in a
    script stemmed before folding (``api.search.SCRIPT_STEMMERS``) means its stem, whatever
    the locale (the index holds that stem beside the word), and is corrected only when the
    org's vocabulary knows neither."""
    words = words_of(q)
    stemmer = stemmer_for(locale)
    scripted, script_stop, scripted_raw = script_words(q)
    stopwords = stopwords | script_stop | query_stopwords(locale)
    corrections: dict[str, str] = {}
    if corrector is not None:
        for index, word in enumerate(words):
            if word in synonyms.words:
                continue
            if word in script_stop:
                continue
            if word in scripted:
                # Neither the word nor its stem is known: the stem is corrected, with the
                # budget of the word as written (folded, Arabic drops its short vowels).
                stems = scripted[word]
                if not any(corrector.knows(lx) for lx in stems):
                    budget = typo_budget(scripted_raw[word])
                    fixed_stems = [corrector.correct(lx, budget) or lx for lx in stems]
                    if fixed_stems != stems:
                        corrections[word] = " ".join(fixed_stems)
                        scripted[word] = fixed_stems
                continue
            if stemmer is not None and corrector.knows(stemmer.stemWord(word)):
                continue  # an inflection the org does not write ("rembourser"), not a typo
            fixed = corrector.correct(word)
            if fixed is not None:
                corrections[word] = fixed
                words[index] = fixed

    def lexemes_of(some: list[str]) -> list[str]:
        found: list[str] = []
        for w in some:
            if w in scripted:
                found.extend(scripted[w])
            else:
                found.append(stemmer.stemWord(w) if stemmer is not None else w)
        return [lx for lx in dict.fromkeys(found) if lx and lx not in stopwords]

    kept = [w for w in words if w not in stopwords]
    if synonyms.ignored and any(w not in synonyms.ignored for w in kept):
        kept = [w for w in kept if w not in synonyms.ignored]
    named, extra = matched_synonyms(words, synonyms)
    in_groups = {w for group in named for member in group for w in member.split()}
    concepts = [[lexeme] for lexeme in lexemes_of([w for w in kept if w not in in_groups])]
    for group in named:
        # A lexeme every member holds ("account" of "delete my account" / "close my
        # account") is a concept of its own: one alternative of the group, it would make any
        # question that says it hold the whole group.
        members = [set(lexemes_of(member.split())) for member in group]
        shared = set.intersection(*members) if len(members) > 1 else set()
        for lexeme in sorted(shared):
            if [lexeme] not in concepts:
                concepts.append([lexeme])
        words_in = [w for m in group for w in m.split() if w not in synonyms.ignored]
        alternatives = [lx for lx in lexemes_of(words_in) if lx not in shared]
        if alternatives:
            concepts.append(alternatives)
    return QueryTerms(words=words, concepts=concepts, corrections=corrections, synonyms=extra)


def matched_synonyms(words: list[str], index: SynonymIndex) -> tuple[list[list[str]], list[str]]:
    """The groups one of whose members the query says (a member of several words matches as
    a phrase), each as its members' folded words, and the words of their other members. Only
    the groups with a member starting with one of the query's words are looked at."""
    text = f" {' '.join(words)} "
    named: list[list[str]] = []
    extra: list[str] = []
    candidates = sorted({g for word in words for g in index.by_first_word.get(word, ())})
    for folded in (index.groups[g] for g in candidates):
        if not any(member and f" {member} " in text for member in folded):
            continue
        named.append([member for member in folded if member])
        for member in folded:
            if f" {member} " in text:
                continue
            extra.extend(w for w in member.split() if w not in words and w not in extra)
    return named, extra
