"""The semantic leg's two models (issue 38): what each reads and how their cosines meet.
WordLlama reads the analysed query (folded, corrected, with synonyms); the multilingual model
reads a sentence whole, so it gets the query as typed with only its typos corrected."""

from __future__ import annotations

from api.answers.ranking import MULTILINGUAL, SEMANTIC, rank
from api.answers.semantic_leg import blend
from api.answers.terms import NO_SYNONYMS, Corrector, analyse
from api.answers.vocabulary import Vocabulary


def test_the_sentence_keeps_the_query_as_typed_but_its_typos() -> None:
    t = analyse(
        "How do I cancle my Subscripton?",
        "en",
        frozenset(),
        Corrector({"cancel": 3, "subscription": 5}),
        NO_SYNONYMS,
    )
    assert t.corrections == {"cancle": "cancel", "subscripton": "subscription"}
    assert t.sentence("How do I cancle my Subscripton?") == "How do I cancel my subscription?"
    # WordLlama's text is the analysed one (folded, no punctuation).
    assert t.text() == "how do i cancel my subscription"


def test_a_sentence_without_typos_is_the_query_as_typed() -> None:
    typed = "Je n'arrive plus à me connecter !"
    t = analyse(typed, "fr", frozenset(), Corrector({"connexion": 1}), NO_SYNONYMS)
    assert t.sentence(typed) == typed  # accents, apostrophes and case kept


def test_a_word_of_a_stemmed_script_is_left_as_typed() -> None:
    typed = "كيف أسترد أموالي"
    t = analyse(typed, "ar", frozenset(), Corrector({"mal": 1}), NO_SYNONYMS)
    # Whatever its stem's correction, the Arabic words reach the model as written.
    assert t.sentence(typed) == typed


def test_the_blend_is_the_mean_of_the_models_a_question_has() -> None:
    wordllama = {"a": 0.6, "b": 0.2}
    use = {"a": 0.4, "c": 0.5}
    # b and c: one model's vector yet (written a moment apart), scored by that one.
    assert blend([wordllama, use]) == {"a": 0.5, "b": 0.2, "c": 0.5}
    assert blend([use]) == use


def test_a_cosine_of_the_multilingual_model_alone_has_its_own_floor() -> None:
    vocabulary = Vocabulary(frequencies={}, documents=10, mean_length=5.0)
    # 0.7 x 0.3 = 0.21: under English's floor (0.25), above the multilingual model's (0.119).
    assert rank([], {"q": 0.3}, [], vocabulary, semantic_leg=SEMANTIC) == []
    found = rank([], {"q": 0.3}, [], vocabulary, semantic_leg=MULTILINGUAL)
    assert [(r.question_id, r.leg) for r in found] == [("q", MULTILINGUAL)]
    assert rank([], {"q": 0.1}, [], vocabulary, semantic_leg=MULTILINGUAL) == []
