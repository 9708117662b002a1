"""Stances: the options a rationale recommends or rejects, read clause by clause with cues (:data:`CUES`), pronouns and hedges (:func:`read_stances`), and how a limitation or trigger is named (:func:`_named`); patterns are tried only at the words a match can start with.

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..roles import RationaleWords
from ..values import Choice, ChoiceTerms
from ._starts import Starts, start_words
from ._text import normalise

if TYPE_CHECKING:
    from ..memos import Memos


_VENDORS = frozenset({"nvidia", "google", "apple", "nordic", "espressif", "qualcomm", "intel", "amd", "arm", "samsung"})
_TOO_GENERIC = frozenset({"ai", "pro", "max", "cpu", "gpu", "reference"})


def device_names(name: str, *nicknames: str) -> tuple[str, ...]:
    """Ways people write a registered device: as registered, without the vendor, without the
    part in parentheses and that part alone ("Nordic nRF52840 (Cortex-M4F)" → "nRF52840",
    "Cortex-M4F"), plus ``nicknames``."""
    forms = [name.strip(), re.sub(r"\s*\([^)]*\)\s*", " ", name).strip(), *re.findall(r"\(([^)]*)\)", name)]
    for form in list(forms):
        words = form.split()
        if len(words) > 1 and words[0].lower() in _VENDORS:
            forms.append(" ".join(words[1:]))
    forms += nicknames
    return tuple(dict.fromkeys(f for f in forms if normalise(f) and normalise(f) not in _TOO_GENERIC))


_MEASURED = (r"(measur(e|ed)|profil(e|ed)|benchmark(ed)?|test(ed)?|validat(e|ed)|verif(y|ied)|tim(e|ed)|check(ed)?|confirm(ed)?"
             r"|run|ran|tr(y|ied)|deploy(ed)?|execut(e|ed))")
_ON_TARGET = r"(on|with|against|for) (a |an |the |our |any |this |that )?(real |actual |physical |target |deployed |production )?{device}"
UNMEASURED_ON = (
    # "nobody ran it on the Jetson", "we never profiled anything on the phone", "we have yet to test it on the board"
    r"(nobody|no one|never|we (have |had |did |could )?(not|never)|i (have |had |did |could )?(not|never)|(we|i) (have|had) yet to)"
    r"( actually| yet| really| even)? " + _MEASURED + r"( (it|this|them|these|that|anything|any of (it|this|them)|the \w+( \w+)?))? "
    + _ON_TARGET,
    # "nothing here was run on an actual phone", "none of these numbers were measured on the T4"
    r"(nothing|none)( here| of (this|it|these|those|them|the \w+))?( \w+)? (was|were|is|are|has been|have been|got)( actually| yet"
    r"| ever)? " + _MEASURED + " " + _ON_TARGET,
    # "the T4 numbers are not measured", "the phone timings remain unverified"
    r"(the |our )?{device} (numbers|timings?|results|figures|latencies|times|behavior|performance|measurements|costs)( \w+)? (are|is"
    r"|were|was|remain|remains|stay|stays|have been|has been)( still)? (not (yet )?" + _MEASURED + r"|never " + _MEASURED
    + r"|unmeasured|untested|unverified|unvalidated|unconfirmed)",
    # "actual on-device behaviour has not been measured"
    r"((actual|real|physical|target|on device|on target|device|hardware) )+(behavior|performance|timings?|latency|latencies|numbers"
    r"|results)( \w+)? (has|have|was|were|is|are)( never| not)( yet)?( been)? " + _MEASURED,
    # "the real target was never measured", "the actual phone has not been tested"
    r"(the |our )?(real|actual|physical) {device}( itself)? (was|is|were|has|have|had)( never| not)( been| yet)* " + _MEASURED,
)
"""The general rule for a limitation about measurement on the target: measurement negated on a named device or
"the real" target.  A lab lists these among the phrasings of its measurement limitation, with ``{device}``
standing for its track's target as people write it."""


REC, REJ = "recommend", "reject"
HEDGE, PRONOUN = "hedge", "pronoun"  # Stance.via: a tentative cue, or an option reached through a pronoun
INFERRED = "inferred"  # Stance.via: through a pronoun that could mean two options, read by what the text says of them


@dataclass(frozen=True)
class Cue:
    """Words that take a stance on the option they point at.

    ``before``: the cue precedes the name ("reject Y") rather than follows it ("Y loses").
    ``strong`` cues can make a contradiction; weak ones only name.  ``reach``: most tokens
    between cue and name; ``filler_only``: those tokens must be :data:`FILLER` words.
    ``hedge``: a tentative stance ("I'd lean towards X", "X probably isn't the way to go"): it
    names the option, never contradicts, and its verdict is uncertain.  ``negated``: a recommending verb
    negated ("I do not recommend X", "we would not choose X"): a rejection that no scoping word softens
    ("… for this deployment"), so against the student's own recommendation it contradicts unless the
    sentence is a condition or a concession.
    """

    pattern: str
    before: bool
    stance: str
    strong: bool
    reach: int
    filler_only: bool = False
    hedge: bool = False
    negated: bool = False


_NOT_PASSIVE = r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bbe )(?<!\bbeen )(?<!\bnot )(?<!\bnever )"
_FIRST_PERSON = (r"(?:i|we)(?: (?:would|will|should|must|can|do|am|are|therefore|thus|hence|so|still|also|now|then|clearly|definitely"
                 r"|strongly|instead|firmly|ultimately|finally))*")
_DECIDE = (r"choose|chose|pick|picked|select|selected|opt for|opted for|go with|went with|adopt|adopted|settle on|settled on"
           r"|recommend|prioritize|prioritise|prioritized|prioritised|take|took")
_REC_VERBS = (r"recommend(?:s|ed|ing)?|choos(?:e|es|ing)|chose|chosen|pick(?:s|ed|ing)?|select(?:s|ing)?|opt(?:s|ed|ing)? for"
              r"|go(?:es|ing)? with|went with|prefer(?:s|red|ring)?|favor(?:s|ed|ing)?|adopt(?:s|ed|ing)?|settl(?:e|ed|ing) on")
_USE_VERBS = (r"use|deploy|ship|run with|try|test|trial|keep(?! in mind)|kept|retain|stay with|stick with|stay on|remain on|switch to|move to"
              r"|migrate to|standardize on|commit to|prefer|favor|go for|go with")
_ADVERB = (r"(?: (?:clearly|still|therefore|thus|also|simply|then|now|overall|definitely|really|hence|so|accordingly|consequently"
           r"|duly|firmly|ultimately|finally|thereby))?")
_QUALITY = (r"best|better|right|clear|recommended|preferred|winning|sensible|safer|safe|obvious|strongest|correct|superior"
            r"|natural|wiser|smarter|stronger|preferable")
_QUALITY_CLAIMED = "|".join(word for word in _QUALITY.split("|") if word not in ("obvious", "natural"))
_WORSE = r"worse|wrong|weaker|poorer|losing|poor|bad|worst"
_ROLE = (r"choice|option|pick|path|plan|call|answer|winner|candidate|design|fit|bet|route|deployment|fix|intervention"
         r"|approach|strategy|solution|placement|lever|move")
_BUDGETS = r"budgets?|limits?|constraints?|deadline|requirements?|target|contract|cap|slo"
_OBJECT_FIRST_REJ = (r"reject(?:ed)?|rule out|ruled out|discard(?:ed)?|drop(?:ped)?|dismiss(?:ed)?|avoid(?:ed)?|exclude(?:d)?"
                     r"|turn down|turned down|pass over|passed over|rule against|ruled against"
                     r"|set aside|pass on|passed on|(?:would|will|do|did|can|should) not (?:recommend|choose|pick|use|keep|adopt"
                     r"|want|take|ship|deploy|go with)")
_OBJECT_FIRST_REC = (r"recommend(?:ed)?|choose|chose|pick(?:ed)?|select(?:ed)?|prefer(?:red)?|favor(?:ed)?|keep|kept"
                     r"|adopt(?:ed)?|go with|went with|take|took|back|endorse|ship|deploy")
# What may follow a verb that has no object: the end of a clause or a scoping word.
_NO_OBJECT = (r"(?= (?:[.,:()]|because|since|as|given|for|due|here|now|too|also|outright|entirely|instead|then|so|but|and"
              r"|while|whereas|which|without|at|on|in|after|today|for now)(?: |$)|$)")
_HEDGE_ADVERBS = r"probably|likely|arguably|perhaps|maybe|really|just|still|honestly|personally|tentatively|cautiously|rather"
_SOFT_GOOD = r"good|solid|safe|sound|reasonable|sensible|decent|fine|wise|smart"
_SOFT_ROLES = (r"bet|fit|choice|option|call|pick|move|idea|path|route|answer|placement|approach|strategy|solution|fix"
               r"|configuration|candidate|design")
CUES: tuple[Cue, ...] = (
    # -- object first ("Eager execution I reject", "compiled with fusion we recommend."): the verb
    #    has no object of its own, so it points back; listed first so that it wins over "I reject …"
    Cue(rf"{_FIRST_PERSON} (?:{_OBJECT_FIRST_REJ}){_NO_OBJECT}", False, REJ, False, 6),
    Cue(rf"{_FIRST_PERSON} (?:{_OBJECT_FIRST_REC}){_NO_OBJECT}", False, REC, False, 6),
    # -- not ready to stand behind an option ("I am not comfortable committing to X")
    Cue(r"(?:not|never|hardly) (?:\w+ )?(?:comfortable|confident|happy|willing|prepared|ready) (?:enough )?(?:committing to"
        r"|to commit to|recommending|to recommend|deploying|to deploy|shipping|to ship|going with|to go with|using|to use"
        r"|standing behind|to stand behind|signing off on|to sign off on|backing|to back|with|in"
        r"|about)|(?:can|could|do|does|would|will) not (?:stand behind|stand by|endorse|defend|sign off on)",
        True, REJ, True, 5, negated=True),
    # -- a recommending verb negated: listed first so that "would not choose" wins over "choose"
    Cue(rf"(?:do|does|did|would|should|could|will|can|must|shall) not (?:\w+ )?(?:{_REC_VERBS}|{_USE_VERBS}|touch|bother with|put"
        r"|spend (?:\w+ ){0,2}(?:time|effort|money|energy) on)", True, REJ, True, 6, negated=True),
    Cue(r"(?:and|but|or) not (?:switch(?:ing)? to|mov(?:e|ing) to|us(?:e|ing)|go(?:ing)? with|pick(?:ing)?|choos(?:e|ing)"
        r"|tak(?:e|ing))", True, REJ, True, 4, negated=True),
    Cue(rf"(?:not|never) (?:{_REC_VERBS})", True, REJ, True, 6, negated=True),
    Cue(rf"(?:wrong|mistake|unwise|no reason|little reason|hard to justify) (?:to |for )(?:{_REC_VERBS}|{_USE_VERBS})?",
        True, REJ, True, 6),
    # -- preceding cues that reject
    # a verdict beside the name in a field or a table row ("compiled fused ( recommended )", "primary ( agx orin ) :
    # retained", "alternative ( orin nx , 3.631 ms ) : rejected")
    Cue(r"(?<=\( )(?:recommended|chosen|preferred|selected|retained|kept|winner)(?= \))"
        r"|(?<=: |, )(?:recommended|chosen|preferred|selected|retained|kept|winner)(?= (?:[.,]|$)|$)", False, REC, True, 10),
    Cue(r"(?:(?<=: )|(?<=, )|(?<=\bso ))(?:rejected|dropped|discarded|ruled out|eliminated|not chosen|out|nope|nah)(?= (?:[.,]|$)|$)",
        False, REJ, True, 16),
    # short verdicts after the name ("eager → out", "so eager rejected."): first, so "rejected" at a clause end is read so
    Cue(r"(?<=→ )out|out(?= (?:[.,:()]|$)|$)|(?:rejected|dropped|discarded|ruled out|eliminated)(?= (?:[.,()]|at|for|because"
        r"|since|as|given|due|with|on)(?: |$)|$)|(?<=\w )(?:rejected|dropped|discarded|ruled out|eliminated)(?= :)", False, REJ,
        False, 1),
    Cue(r"(?<=\w )(?:retained|kept|chosen|selected|recommended|preferred|adopted)(?= (?:[.,()]|$)|$)", False, REC, False, 1),
    Cue(r"rejected (?:alternative|option|candidate|plan|path|design)(?: is| was| would be)?", True, REJ, True, 4),
    Cue(_NOT_PASSIVE + r"(?:reject(?:s|ed|ing)?|rul(?:e|es|ed|ing) out|discard(?:s|ed|ing)?)|(?<=\bare )(?:rejecting|ruling out"
        r"|discarding)|(?<=\bam )(?:rejecting|ruling out|discarding)", True, REJ, True, 6),
    # "we rule it out": the pronoun between verb and particle is the option
    Cue(r"(?:rul(?:e|es|ed|ing)|count(?:s|ed)?|cross(?:es|ed)?|leave|leaves|left)(?= (?:it|this|that|them) out(?: |$))", True, REJ,
        False, 1),
    Cue(r"(?:dismiss|drop|abandon|forgo|skip|avoid)(?:s|ed|ing|ped|ping)?|declin(?:e|es|ed|ing)|steer(?:s|ed|ing)? clear of"
        r"|(?:ditch|scrap|bin|nix|strike|shelve)(?:s|es|ed|ing|ped|ping|ned|ning)?|(?:cross|crosses|crossed|crossing) off"
        r"|(?:switch|move|migrat)(?:e|es|ed|ing)? away from", True, REJ, False, 4),
    Cue(r"instead of|rather than|in place of|in preference to", True, REJ, False, 3),
    Cue(r"not|over|neither|nor|(?:better|faster|cheaper|preferable|superior|more efficient) (?:than|to)|beats?|outperforms?|dominates",
        True, REJ, False, 2, filler_only=True),
    # -- preceding cues that recommend
    # (not "the obvious answer is X", "the tempting pick would be X": what the student argues against)
    Cue(r"(?<!obvious )(?<!tempting )(?<!intuitive )(?<!naive )(?<!expected )(?<!natural )(?<!initial )(?<!first )"
        r"(?:final )?(?:recommendation|choice|choose|chose|pick|decision|verdict|proposal|answer) (?:is|would be|here is)"
        r"(?: therefore| thus| hence| still| clearly| simply| then)?(?: to)?"
        r"(?: (?:use|go with|keep|adopt|deploy|choose|pick|stay with|stick with|select))?", True, REC, True, 5),
    Cue(r"(?:recommendation|recommended|recommend|rec|choice|chosen|pick|decision|verdict|winner|selected|preferred|retained|keep"
        r"|placement|final|plan)"
        r"(?: option| plan| path| candidate| design)? :", True, REC, True, 4),
    Cue(r"(?:rejected|rejection|rej|reject|against|not chosen|ruled out|dropped|discarded)(?: option| plan| path| candidate"
        r"| design)? :",
        True, REJ, True, 4),
    # ("the obvious answer is X" is what a student argues against as often as for: no cue)
    Cue(rf"(?<!obvious )(?<!natural )(?:{_QUALITY_CLAIMED}) (?:{_ROLE}) (?:is|remains|would be|here is)", True, REC, True, 4),
    Cue(rf"{_FIRST_PERSON} (?:{_DECIDE})", True, REC, True, 6),
    Cue(_NOT_PASSIVE + r"recommend(?:s|ed|ing)?", True, REC, True, 6),
    Cue(_NOT_PASSIVE + rf"(?:{_REC_VERBS})", True, REC, False, 6),
    Cue(rf"(?:i|we|you|they|team|should|would|will|must|to|us|can|shall)(?: \w+)? (?:{_USE_VERBS})|(?:^|(?<=\. )|(?<=: )|(?<=, )|(?<=\bso )|(?<=and ))(?:{_USE_VERBS})",
        True, REC, False, 4),
    Cue(r"in favor of|loses to|lost to|beaten by|outperformed by|(?:worse|slower|costlier|more expensive) than", True, REC, False, 3),
    # -- hedged cues (weak, uncertain): "I'd lean towards X", "my vote goes to X", "I'd steer away from Y"
    Cue(rf"{_FIRST_PERSON}(?: (?:{_HEDGE_ADVERBS}))* (?:lean(?:ing|s)? (?:toward|to)|am inclined (?:toward|to(?: go with| pick"
        r"| choose| use| recommend)?)|(?:would )?(?:suggest|propose|advise|go for|vote for|side with|argue for|put my money on))",
        True, REC, False, 5, hedge=True),
    Cue(r"(?:leaning|inclined|lean) (?:toward|to)|my (?:inclination|instinct|gut|preference|vote|money|bet)(?: is| would be"
        r"| goes| lies)?(?: on| with| for| to| toward)?(?: (?:go with|pick|choose|use))?", True, REC, False, 4, hedge=True),
    Cue(rf"{_FIRST_PERSON}(?: (?:{_HEDGE_ADVERBS}))* (?:steer away from|stay away from|pass on|be wary of|am wary of|not bother"
        r" with|hesitate to (?:use|adopt|recommend|choose)|not (?:convinced|sold) (?:by|on)|doubt)|(?:i am|we are) not"
        r" (?:convinced|sold) (?:by|on)|hard to (?:recommend|justify)", True, REJ, False, 5, hedge=True),
    # -- following cues that reject (negated forms first, so "is not the best choice" is not read as "is … the best choice")
    Cue(r"(?:is|are|was|were|gets|got|should be|must be|has been|have been|had been|will be|would be|is being)" + _ADVERB
        + r"(?: considered and)?"
        + r" (?:rejected|ruled out|discarded|not recommended|dismissed|dropped|abandoned|set aside|shelved|eliminated|excluded"
          r"|declined|left out|scrapped|ditched|binned|struck off|crossed off|benched|parked|passed on"
          r"|vetoed|turned down|passed over|crossed off|not pursued|not chosen|not selected|not adopted|off the table"
          r"|out of the running)"
        rf"|(?:is|are|would be) (?:the|a) (?:{_WORSE}) (?:{_ROLE})|(?:is|are) not (?:the |my |our )?(?:{_QUALITY}|recommended|preferred)"
        r"|should not be (?:used|deployed|chosen|kept|adopted)|(?:is|are) (?:not|no) good|(?:is|are) not choose"
        r"|(?:is|are) the first to go|(?:is|are) not (?:something|what|the thing) (?:i|we) would (?:\w+ )?(?:ship|recommend|choose"
        r"|use|deploy|pick)|(?:should |must |will |would )?(?:stay|stays|remain|remains|go|goes|come|comes) off the table",
        False, REJ, True, 6),
    # -- a preference over the alternative ("I'd rather stick with Y"), before the modal below
    Cue(rf"{_FIRST_PERSON} rather (?:{_USE_VERBS}|{_DECIDE}|have|take)", True, REC, True, 5),
    # -- a modal before an option said as a verb phrase ("you should run the model locally", "we must keep the primary")
    Cue(r"(?:i|we|you|team) (?:should|must|would|will|ought to|need to|had better|decided to|decide to|chose to|choose to"
        r"|plan to|want to|prefer to|are going to|am going to)(?! not| never| rather| hardly)", True, REC, False, 1, filler_only=True),
    # -- common forms of learners' English ("I am decide for X", "I not choose X", "I am not take X")
    Cue(r"(?:i|we) (?:am |are |have |will |would )?(?:decide|decided|deciding)(?: for| on)?", True, REC, True, 5),
    Cue(rf"(?:i|we) (?:am |are |do |did )?not (?:{_REC_VERBS}|take|use|keep|want)", True, REJ, True, 6, negated=True),
    # -- the progressive ("I am keeping the primary", "we are going with X")
    Cue(r"(?:i|we) (?:am|are)(?: \w+)? (?:keeping|choosing|picking|recommending|selecting|going with|sticking with|staying with"
        r"|taking|using|adopting)", True, REC, True, 5),
    # -- what is left once the others are out ("That leaves running locally", "So remain faster arithmetic")
    Cue(r"(?:that|this|which|it) leaves|(?<=so )remains?|(?<=then )remains?", True, REC, False, 3),
    # -- "so no raw", "which I recommend", "what is left is X", the subjunctive ("that X be retained")
    Cue(r"(?<=so )no|(?<=then )no|(?<=: )no(?= \w)|no to", True, REJ, False, 2, filler_only=True),
    Cue(r"set(?= (?:\S+ ){1,4}aside(?: |$))", True, REJ, False, 5),
    Cue(r"(?<=, )which (?:i|we) (?:have |had )?(?:\w+ )?(?:set aside|rejected|ruled out|dropped|discarded)", False, REJ, True, 3),
    Cue(r"(?<=, )which (?:i|we) (?:recommend|choose|pick|keep|prefer|go with|select)", False, REC, True, 3),
    Cue(r"what (?:is left|remains|is left over) is|the (?:one|option|design|path|candidate) (?:left|remaining) is", True, REC, True, 4),
    Cue(r"(?<!not )be (?:retained|kept|chosen|selected|adopted|recommended|preferred|used|deployed)", False, REC, True, 6),
    Cue(r"(?<!not )be (?:rejected|dropped|discarded|ruled out|excluded|avoided|set aside)", False, REJ, True, 6),
    # -- an imperative ("ok so just run it on the phone"), putting one off ("leave faster arithmetic for later")
    Cue(r"(?:(?<=^)|(?<=\. )|(?<=: )|(?<=\bso )|(?<=\bthen ))(?:just|simply)", True, REC, False, 0),
    Cue(r"(?:i|we|you|and|so|then) (?:\w+ )?(?:leave|leaving|park|parking|defer|deferring|postpone|postponing|shelve|shelving)",
        True, REJ, False, 2),
    # -- a yes or no after the name ("faster arithmetic yes, checkpointing no")
    Cue(r"(?<=\w )yes(?= (?:[.,;]|$)|$)", False, REC, False, 0),
    Cue(r"(?<=\w )no(?= (?:[.,;]|$)|$)", False, REJ, False, 0),
    # -- a question that rejects ("Why not checkpoint activations?")
    Cue(r"why not", True, REJ, False, 2),
    # -- holding on to an option, turning one down
    Cue(r"(?:hold|holds|holding|held|hang|hangs|hanging|hung) (?:on to|onto)", True, REC, False, 4),
    Cue(r"(?:turn|turns|turned|turning) down|(?:say|says|said|saying) no to|(?:walk|walks|walked|walking) away from",
        True, REJ, False, 4),
    # -- a tick or a cross beside the name (read as "( ticked )", "( struck )"): it names, it never contradicts
    Cue(r"(?<=\( )ticked(?= \))", False, REC, False, 10),
    Cue(r"(?<=\( )struck(?= \))", False, REJ, False, 10),
    # -- a verdict in brackets beside the name ("Compiled, 5 graph breaks (rejected)")
    Cue(r"(?<=\( )(?:rejected|dropped|discarded|ruled out|not chosen|loser|no|out|reject)(?= \))", False, REJ, True, 10),
    # -- a headline verdict ("TL;DR: faster arithmetic, not prefetch")
    Cue(r"(?:(?<=tl \. )dr|tl ?dr|tldr|bottom line|in short|short version|conclusion|upshot) :", True, REC, True, 4),
    # -- what the evidence or the student favours, said in other words ("the evidence favours Y", "I'd rather keep Y")
    # ("the evidence, read as a whole, though, clearly favors Y", "the evidence points clearly to Y")
    Cue(r"(?:evidence|numbers|data|results|measurements|figures|runs)(?: [^ .;,:()]+){0,6}?(?: , (?:though|however|still|then"
        r"|overall|again) , it)? (?:clearly |actually |really |strongly |all )?"
        r"(?:favors?|supports?|points?(?: clearly| strongly| firmly)? (?:to|toward|towards)|backs?|argues? for)"
        r"|(?:comes?|came) out in favor of", True, REC, True, 5),
    # -- following cues that recommend
    Cue(r"(?:(?:would|will|should|could) )?serves? (?:us |you |them |the \w+ |this \w+ )?better|(?:is|are|would be) preferable",
        False, REC, True, 5),
    Cue(rf"(?:is|are|remains|stays|becomes|would be|will be|should be){_ADVERB} (?:the|my|our) (?:{_QUALITY})(?: first| overall"
        rf"| real| actual)? (?:{_ROLE})",
        False, REC, True, 6),
    Cue(r"(?:is|are)" + _ADVERB + r" (?:recommended|preferred|chosen|selected|retained|adopted|the way to go"
        r"|my (?:choice|pick|recommendation))"
        r"|(?:gets|has) (?:my|our) (?:vote|recommendation|sign off|approval|blessing|go ahead)"
        r"|should be (?:used|deployed|chosen|kept|adopted|preferred|shipped)"
        r"|(?:is|are) what (?:i|we) (?:recommend|choose|pick|would choose|would pick)", False, REC, True, 6),
    Cue(r"(?:is|are) not what (?:i|we) (?:would )?(?:recommend|choose|pick|ship|use|deploy|want)", False, REJ, True, 6),
    Cue(rf"(?:is|are) (?:the|my|our) (?:(?:{_SOFT_ROLES}|{_ROLE}) )(?:that )?(?:i|we|you) (?:would |will |should |ought to |want to )?"
        r"(?:test|try|pick|choose|recommend|go with|use|ship|deploy|prioritize|keep|back)", False, REC, True, 6),
    # -- hedged following cues (weak, uncertain) and short verdicts ("So the H100 it is", "(my pick)")
    Cue(rf"(?:(?:{_HEDGE_ADVERBS}) )?(?:is|are|seems|looks|sounds)(?: (?:{_HEDGE_ADVERBS}))? (?:not|never|hardly) (?:the way to go"
        rf"|worth (?:it|the \w+)|a (?:{_SOFT_GOOD}|great) (?:{_SOFT_ROLES})|ideal|advisable|recommended|the answer"
        rf"|(?:the|my|our) (?:right|best|better|{_QUALITY}) (?:{_SOFT_ROLES}|{_ROLE})|(?:my|our) (?:pick|choice|recommendation"
        rf"|preference|favorite))|(?:does|do) not (?:seem|look|sound) (?:like )?(?:the way to go|worth (?:it|the \w+)|a (?:{_SOFT_GOOD}"
        rf") (?:{_SOFT_ROLES}))|(?:seems|looks|sounds) (?:like )?(?:a |the )?(?:poor|bad|weak|risky|worse|wrong|questionable)"
        rf" (?:{_SOFT_ROLES})", False, REJ, False, 5, hedge=True),
    Cue(rf"(?:appears?|seems?) to be (?:the|a) (?:(?:most|more) (?:defensible|sensible|appropriate|suitable|robust|reasonable"
        rf"|promising|justifiable)|{_SOFT_GOOD}|safer|better|best|right) (?:{_SOFT_ROLES}|{_ROLE})", False, REC, False, 6, hedge=True),
    Cue(rf"(?:(?:{_HEDGE_ADVERBS}) )?(?:is|are|seems|looks|sounds)(?: (?:{_HEDGE_ADVERBS}))* (?:like )?(?:the way to go|the way forward"
        rf"|a (?:{_SOFT_GOOD}) (?:{_SOFT_ROLES})|(?:the|a) (?:safer|better|best|right|{_SOFT_GOOD})(?: first| overall| initial)?"
        rf" (?:{_SOFT_ROLES}|{_ROLE}))",
        False, REC, False, 5, hedge=True),
    Cue(r"(?:was|were|has been|have been|gets|got|will be)" + _ADVERB + r" (?:recommended|preferred|chosen|selected|picked|adopted"
        r"|kept|retained|favored)|(?:is|are|remains|stays|was|becomes|would be|will be)" + _ADVERB + r" (?:my|our) (?:choice|pick|recommendation"
        r"|preference|favorite|winner|placement|answer|decision|fix)|(?:is|are) the answer", False, REC, False, 6),
    Cue(r"(?:sticking|staying|remaining) (?:with|on)|retaining", True, REC, False, 4),
    Cue(r"(?:stays|remains|is retained|is kept|stays in|wins out)(?= (?:[.,;:]|and|but|while|whereas|since|because)(?: |$)|$)",
        False, REC, False, 2),
    Cue(r"(?:should|would|will|must) (?:be|become|stay|remain) (?:the|our) (?:default|standard|go to)", False, REC, False, 5),
    Cue(r"(?:is|are|seems|would be|looks) (?:hard|difficult) to (?:justify|recommend|defend)", False, REJ, False, 6, hedge=True),
    Cue(r"it is(?= (?:[.,:!)]|and|$)|$)|(?:my|our) (?:pick|choice|recommendation|vote|preference|favorite|winner|call|bet)"
        r"(?= (?:[.,:)]|and|for)(?: |$)|$)|gets the nod|gets my nod|takes it|(?:is|are) the one(?: to (?:pick|choose|use|go with))?"
        r"|hands down|for the win|ftw|all the way|wins out", False, REC, False, 1),
    Cue(r"(?:is|are|was|were)(?: \w+)? (?:a )?(?:non starter|nonstarter|no go|dead end|dead on arrival|dealbreaker|deal breaker)"
        r"|(?:does|do|did) not make sense|makes? no sense|(?:is|are)(?: just)? dead", False, REJ, False, 5),
    Cue(r"(?:is|are) the (?:move|play|way to go|way forward)", False, REC, False, 4),
    Cue(r"wins|won|comes out ahead|comes out on top|is the winner|pays off|repays (?:its|the) setup|beats|outperforms|dominates"
        r"|(?:is|are)(?: \S+)? (?:faster|cheaper|better|more efficient|leaner)", False, REC, False, 5),
    Cue(r"loses|lose|lost|falls? short|falls? behind|is out|drops out|is not worth(?: it| the \w+)?|(?:does|did) not (?:pay off|repay)"
        rf"|never (?:pays off|repays)|(?:fails|failed|misses|missed|violates|violated|exceeds|exceeded|breaks|blows)"
        rf"(?: the| its| our| every| both| all)?(?: \w+)? (?:{_BUDGETS})"
        r"|fails to \w+|(?:is|are|was|were|becomes|remains)(?: \S+)? (?:infeasible|not feasible|not acceptable|unacceptable|not allowed"
        r"|not an option|not viable|not suitable|unsuitable|unsupported|too slow|too expensive"
        r"|too costly|slower|costlier|more expensive|worse|less efficient|over budget|out of budget|not viable|unviable)"
        r"|(?:can|could|does|did|will) not (?:run|execute|fit|meet|pass|survive|win|compete|keep up|deliver)", False, REJ, False, 6),
)
NEGATORS = frozenset({"not", "never", "nor", "hardly"})
FILLER = frozenset(["the", "a", "an", "our", "my", "this", "that", "its", "their", "plain", "pure", "just", "only", "simple", "simply", "current", "existing", "native", "whole", "full", "fully", "tested", "selected", "candidate", "option", "(", ")", "using", "keeping", "choosing", "picking"])
CLAUSE_BREAKS = frozenset(["because", "since", "so", "therefore", "thus", "hence", "whereas", "while", "although", "though", "but", "however", "yet", "which", "when", "whenever", "if", "unless", "once", "until"])
HYPOTHETICAL = frozenset(["if", "unless", "whenever", "once", "until", "assuming", "provided", "otherwise", "although", "though", "whereas", "while", "despite", "could", "might", "only", "below", "above", "beyond", "single", "fewer"])
# Words that scope a claim ("the better choice at one execution", "for debugging", "last year"):
# a stance whose clause holds one, outside the names and cues, is qualified and never a contradiction.
QUALIFIERS = frozenset(["for", "at", "in", "on", "during", "under", "with", "without", "by", "below", "above", "beyond", "until", "when", "whenever", "only", "last", "previously", "before", "earlier", "later", "except", "unless", "if", "once", "given", "assuming"])
_PAUSES = frozenset({".", ",", ":", "(", ")"})
# A trigger is said as a condition ("if", "revisit when") or as a change ("the execution count changes");
# the bare label "trigger:" before a name is not enough.
TRIGGER_CUE = re.compile(
    r"(?<!\w)(?:if|when|whenever|once|unless|until|should|as soon as|in case|re ?evaluat\w*|revisit\w*|reconsider\w*"
    r"|reopen\w*|re ?(?:check|run|test|assess|examine|measure|do|benchmark|profile|visit|open|eval)\w*|monitor\w*|watch\w*)(?!\w)")
CHANGE_WORDS = re.compile(
    r"(?<!\w)(?:chang|grow|grew|drop|fall|fell|ris|rose|shrink|shrank|tighten|increas|decreas|doubl|halv|shift|mov|vari|vary"
    r"|differ|improv|arriv|appear|fir|trip|break|broke|exceed|relax|becom|tighter|looser|stricter|lost|los(?:e|es|ing)\b|miss|cross|breach"
    r"|violat)\w*(?!\w)")
LIST_SIZE = 3  # a sentence naming this many options of one list is a keyword list
_BREAKS = CLAUSE_BREAKS | {"."}


class _Scanner:
    """A pattern tried only at the tokens a match can start with (:func:`start_words`).

    It is compiled on first use: the cues' scanner costs tens of milliseconds, kept out of
    ``import mlsys_grader``, and a reader's scanners are compiled only when a rationale needs them.
    """

    def __init__(self, source: str):
        self.source = source

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)

    @cached_property
    def starts(self) -> Starts:
        """:func:`start_words` of the pattern, which is compiled first: a malformed pattern fails here."""
        self.pattern  # noqa: B018 -- compiled for its error
        return start_words(self.source)

    def finditer(self, doc: _Text) -> Iterator[re.Match[str]]:
        if self.starts is None:
            yield from self.pattern.finditer(doc.norm)
            return
        exact, prefixes = self.starts
        hits = doc.words & exact
        if prefixes:
            hits |= {word for word in doc.words if word.startswith(prefixes)}
        end = 0
        for start in sorted(position for word in hits for position in doc.offsets(word)):
            if start >= end and (match := self.pattern.match(doc.norm, start)):
                end = match.end()
                yield match

    def search(self, text: str) -> bool:
        return self.pattern.search(text) is not None


def _alternatives(prefix: str, sources: Sequence[str]) -> str:
    """One pattern trying ``sources`` in order as whole words, each in group ``{prefix}{i}``."""
    return r"(?<![\w])(?:" + "|".join(f"(?P<{prefix}{i}>{source})" for i, source in enumerate(sources)) + r")(?![\w])"


_CUES = _Scanner(_alternatives("c", [cue.pattern for cue in CUES]))


def _which(match: re.Match[str]) -> int:
    """Which source of an :func:`_alternatives` pattern matched (its group is named ``<prefix><index>``)."""
    name = match.lastgroup
    if name is None:  # every alternative is a named group, so a match always names one
        raise LookupError(f"no alternative is named in the match {match.group()!r}")
    return int(name[1:])


@dataclass(frozen=True)
class Stance:
    """One option the text recommends or rejects, where, and how firmly.

    ``hypothetical``: said in a conditional, concessive or scoped sentence or clause ("if …",
    "although …", "… at one execution"), so it names the option but is never a contradiction.
    """

    option: str
    stance: str
    strong: bool
    hypothetical: bool
    excerpt: str
    via: str = ""
    """How the option was reached when not by its name and a firm cue: :data:`HEDGE`, :data:`PRONOUN` or :data:`INFERRED`."""
    tentative: bool = False
    """Said with a hedge, whichever way the option was reached ("I'd lean towards the former")."""


def _fill(pattern: str, slots: Mapping[str, str]) -> str:
    """``pattern`` with ``{slot}`` placeholders filled and its groups made non-capturing."""
    pattern = re.sub(r"(?<!\\)\((?!\?)", "(?:", pattern)
    return re.sub(r"\{([a-z_]\w*)\}", lambda m: slots.get(m.group(1), r"(?!x)x"), pattern)


class Reader:
    """The compiled patterns for one lab and track: option names, decisive phrasings,
    limitation and trigger phrasings."""

    def __init__(self, terms: ChoiceTerms, triggers: Sequence[Choice], limitations: Sequence[Choice]):
        slots = {name: "(?:" + "|".join(sorted({re.escape(normalise(a)) for a in aliases if normalise(a)}, key=len,
                                               reverse=True)) + ")"
                 for name, aliases in terms.slots}
        names: list[tuple[bool, int, str, str]] = []
        decisive: list[tuple[str, str]] = []
        for option in terms.options:
            names += [(True, -len(normalise(k)), re.escape(normalise(k)), option.value)
                      for k in option.keywords if normalise(k)]
            names += [(False, 0, _fill(p, slots), option.value) for p in option.phrasings]
            decisive += [(_fill(p, slots), option.value) for p in option.decisive]
        names.sort(key=lambda item: (item[0], item[1]))  # phrasings first, then the longest keyword first
        self.name_options = [value for *_, value in names]
        self.names = _Scanner(_alternatives("n", [source for _, _, source, _ in names])) if names else None
        self.decisive_options = [value for _, value in decisive]
        self.decisive = _Scanner(_alternatives("d", [source for source, _ in decisive])) if decisive else None
        self.triggers = {c.value: self._choice(c, slots) for c in triggers}
        self.limitations = {c.value: self._choice(c, slots) for c in limitations}

    @staticmethod
    def _choice(choice: Choice, slots: Mapping[str, str]) -> _Scanner:
        sources = [re.escape(normalise(k)) for k in choice.keywords if normalise(k)]
        sources += [_fill(p, slots) for p in choice.phrasings]
        return _Scanner(r"(?<![\w])(?:" + "|".join(sources) + r")(?![\w])")


def reader_for(memos: Memos, lab: RationaleWords, terms: ChoiceTerms) -> Reader:
    """The compiled :class:`Reader` for ``terms.key``, built once per lab object and kept in ``memos``."""
    reader: Reader | None = memos.readers.get((lab, terms.key))
    if reader is None:
        reader = memos.readers[(lab, terms.key)] = Reader(terms, lab.triggers, lab.limitations)
    return reader


def ready_reader(memos: Memos, lab: RationaleWords, terms: ChoiceTerms) -> None:
    """Build the reader for ``terms`` now, with every pattern compiled and its start words found, the cues' too: what
    a batch does once before its workers fork (:meth:`mlsys_grader.replay.Replay.prepare`), so each worker starts with
    them instead of finding them again on its first rationale of each lab and track."""
    reader = reader_for(memos, lab, terms)
    for scanner in (_CUES, reader.names, reader.decisive, *reader.triggers.values(), *reader.limitations.values()):
        if scanner is not None:
            scanner.starts  # noqa: B018 -- computed for what it keeps


_CONSEQUENCE = re.compile(r" , (?:and )?(?:so|therefore|hence|thus|which means|meaning) ")
_CONDITIONAL = frozenset({"if", "unless", "whenever", "when", "once", "until", "assuming", "provided", "otherwise", "should",
                          "could", "might", "would", "were"})


class _Text:
    """A normalised text split into tokens (one space between tokens, so a character offset
    gives its token by counting spaces)."""

    def __init__(self, text: str):
        self.norm = normalise(text)
        self.tokens = self.norm.split(" ") if self.norm else []
        self.words = frozenset(self.tokens)
        # NOTE: every scanner (names, cues, decisive phrasings, each limitation and trigger) asks where
        # its start words occur, so the offsets of every token are found once, in one pass.
        self._offsets: dict[str, list[int]] = {}
        offset = 0
        for token in self.tokens:
            self._offsets.setdefault(token, []).append(offset)
            offset += len(token) + 1
        self._hypothetical: dict[tuple[int, int], bool] = {}
        self.stances: dict[Reader, tuple[tuple[Stance, ...], frozenset[str]]] = {}
        """What :func:`_read_stances` read in this text with each reader."""

    def offsets(self, word: str) -> Sequence[int]:
        """Character offsets of every occurrence of ``word`` as a token, in order."""
        return self._offsets.get(word, ())

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        """Token indices [start, end) of a match."""
        return self.norm.count(" ", 0, match.start()), self.norm.count(" ", 0, match.end()) + 1

    def bounds(self, position: int) -> tuple[int, int]:
        """Character offsets [low, high) of the sentence holding ``position``."""
        low = self.norm.rfind(" . ", 0, position + 1)
        high = self.norm.find(" . ", position)
        return (low + 3 if low >= 0 else 0), (high if high >= 0 else len(self.norm))

    def hypothetical(self, position: int) -> bool:
        """True when the sentence at ``position`` is conditional or concessive ("if", "although"…)."""
        low, high = self.bounds(position)
        # a consequence after a comma is a main clause of its own ("…, while the compiled path needs 2.4 ms, so the
        # numbers favor eager"): the condition or concession before it does not reach it
        # (a conditional still reaches it: "if the count drops, eager is faster, so I would switch")
        consequences = [m.end() for m in _CONSEQUENCE.finditer(self.norm, low, position)]
        if consequences and _CONDITIONAL.isdisjoint(self.norm[low:consequences[-1]].split(" ")):
            low = consequences[-1]
        # "until" after the claim bounds it in time ("stays off the table until the power is measured"), not a condition
        until = self.norm.find(" until ", position, high)
        if until >= 0 and "until" not in self.norm[low:position].split(" "):
            high = until
        if (low, high) not in self._hypothetical:
            words = self.norm[low:high].split(" ")
            # "though" before a pause is an adverb ("On reflection, though, Y is better"), not a concession
            words = [w for i, w in enumerate(words) if w != "though" or (i + 1 < len(words) and words[i + 1] not in _PAUSES)]
            # "only" makes a condition only before one ("only if", "only at one execution"), not in "sends only 0.12 MB"
            words = [w for i, w in enumerate(words) if w != "only" or (i + 1 < len(words) and words[i + 1] in _ONLY_BEFORE)]
            # "once more", "once again" repeat; they set no condition
            words = [w for i, w in enumerate(words) if w != "once" or i + 1 == len(words) or words[i + 1] not in ("more", "again")]
            self._hypothetical[(low, high)] = not HYPOTHETICAL.isdisjoint(words)
        return self._hypothetical[(low, high)]

    def one_clause(self, low: int, high: int) -> bool:
        """True when tokens [low, high) hold no sentence end or clause break."""
        return _BREAKS.isdisjoint(self.tokens[low:high])


_REACH = max(cue.reach for cue in CUES) + 12  # tokens around a mention where a cue can sit (reach and cue length)


def read_stances(text: str | _Text, reader: Reader) -> list[Stance]:
    """Every stance the text takes on an option (see the module docstring, steps 1–4)."""
    return _read_stances(text if isinstance(text, _Text) else _Text(text), reader)[0]


# Words that stand for an option named just before ("… I reject it", "the latter loses").
_PRONOUNS = re.compile(r"(?<![\w])(?:it|(?:this|that) (?:one|option|path|choice|candidate|plan|design|approach|alternative)"
                       r"|(?:this|that)(?= is (?:my|our|the) (?:recommendation|choice|pick|call|answer))"
                       r"|the (?:former|latter)|the (?:first|second)(?: one)?(?= (?:only|is|was|would|does|did|adds|removes|saves"
                       r"|takes|needs|costs|gets|keeps|loses|wins|fails|misses|reaches)\b))(?![\w])")


_ORDINAL = {"the first": "the former", "the first one": "the former", "the second": "the latter", "the second one": "the latter"}


def _pronoun_mentions(doc: _Text, mentions: Sequence[tuple[int, int, str, int]], taken: set[int],
                      ambiguous: list[tuple[int, int, tuple[str, ...], int]] | None = None) -> list[tuple[int, int, str, int]]:
    """Mentions made by a pronoun, resolved to the option named before it in the same sentence, or
    else in the previous sentence, when that names exactly one option ("the former" / "the latter":
    the first / the last of two or more).  A pronoun that could mean two options stands for none here; it is
    listed in ``ambiguous`` with them, for :func:`_stances_in` to resolve by what the text says of them elsewhere."""
    if not mentions or ("it" not in doc.words and "this" not in doc.words and "that" not in doc.words
                        and "former" not in doc.words and "latter" not in doc.words and "first" not in doc.words
                        and "second" not in doc.words):
        return []
    found = []
    starts = [m[0] for m in mentions]
    for match in _PRONOUNS.finditer(doc.norm):
        start, end = doc.span(match)
        if start in taken:
            continue
        low, _ = doc.bounds(match.start())
        before = [m for m in mentions[:bisect.bisect_left(starts, start)]]
        sentence_start = doc.norm.count(" ", 0, low) if low else 0
        window = [m for m in before if m[0] >= sentence_start]
        if not window and low >= 3:
            previous_low, _ = doc.bounds(low - 3)
            previous_start = doc.norm.count(" ", 0, previous_low) if previous_low else 0
            window = [m for m in before if previous_start <= m[0] < sentence_start]
        options = list(dict.fromkeys(m[2] for m in window))
        word = _ORDINAL.get(match.group(), match.group())
        if word in ("the former", "the latter"):
            option = (options[0] if word == "the former" else options[-1]) if len(options) >= 2 else None
        else:
            option = options[0] if len(options) == 1 else None
        if option is not None:
            found.append((start, end, option, match.start()))
        elif ambiguous is not None and len(options) >= 2 and word not in ("the former", "the latter"):
            ambiguous.append((start, end, tuple(options), match.start()))
    return found


def _resolved(doc: _Text, cues: Sequence[tuple[int, int, Cue]], mentions: Sequence[tuple[int, int, str, int]],
              ambiguous: Sequence[tuple[int, int, tuple[str, ...], int]], stances: Sequence[Stance], covered: set[int]
              ) -> list[Stance]:
    """Stances through a pronoun that could mean two options, read as a person reads them: "X and Y both meet the
    deadline, but Y keeps too little, so I rule it out" rejects the one of them the text does not recommend by
    name (recommends the one it does not reject).  Through a pronoun, so never a contradiction."""
    found: list[Stance] = []
    if not ambiguous:
        return found
    by_name = {(s.stance, s.option) for s in stances if not s.via}
    cue_starts = [cue[0] for cue in cues]
    for start, end, options, position in ambiguous:
        trial = sorted([*mentions, (start, end, options[0], position)])
        index = trial.index((start, end, options[0], position))
        low, high = bisect.bisect_left(cue_starts, start - _REACH), bisect.bisect_right(cue_starts, end + _REACH)
        hit = _nearest_cue(doc, cues[low:high], trial, [m[0] for m in trial], index)
        if hit is None:
            continue
        _, stance, cue_start, cue_end, hedge, _ = hit
        other = REC if stance == REJ else REJ
        left = [option for option in options if (other, option) not in by_name]
        if len(left) == 1:
            lo, hi = min(start, cue_start), max(end, cue_end)
            found.append(Stance(left[0], stance, False, doc.hypothetical(position) or _qualified(doc, lo, hi, covered),
                                " ".join(doc.tokens[lo:hi]), INFERRED, hedge))
    return found


_SENTENCE_ENDS = frozenset({".", "!", "?", ";"})
_OVER = frozenset({"over", ">", "beats", "before"})
_DETERMINERS = frozenset({"the", "a", "an", "our", "my"})


def _headlines(doc: _Text, mentions: Sequence[tuple[int, int, str, int]]) -> list[Stance]:
    """Verdicts written as headlines: a sentence that is an option's name alone ("Local.", "Faster arithmetic!"), or
    one that opens with an option put over another ("`compiled_fused` over `eager`.", "faster arithmetic > prefetch
    here"): the first is recommended."""
    found: list[Stance] = []
    for index, (start, end, option, _) in enumerate(mentions):
        first = start - 1 if start and doc.tokens[start - 1] in _DETERMINERS else start  # "The Jetson AGX Orin over …"
        opens = not first or doc.tokens[first - 1] in _SENTENCE_ENDS or (
            first >= 2 and doc.tokens[first - 1] == ":" and doc.tokens[first - 2] in ("so", "verdict", "answer"))
        if not opens:
            continue
        stop = end
        if stop < len(doc.tokens) and doc.tokens[stop] == "(" and ")" in doc.tokens[stop:stop + 8]:
            stop = doc.tokens.index(")", stop) + 1  # "primary (nRF52840) over …"
        after = doc.tokens[stop] if stop < len(doc.tokens) else "."
        alone = after in _SENTENCE_ENDS and stop == end
        if after == "," and stop + 1 < len(doc.tokens) and doc.tokens[stop + 1] == "not":
            after, stop = "over", stop + 1  # "Primary H100, not the A100 alternative"
        nxt = stop + 2 if stop + 1 < len(doc.tokens) and doc.tokens[stop + 1] in _DETERMINERS else stop + 1
        over = (after in _OVER and index + 1 < len(mentions) and mentions[index + 1][0] == nxt
                and mentions[index + 1][2] != option)
        if alone or over:
            found.append(Stance(option, REC, False, False, " ".join(doc.tokens[start:end + (2 if over else 0)]), ""))
    return found


def _read_stances(doc: _Text, reader: Reader) -> tuple[list[Stance], set[str]]:
    """(every stance, every option mentioned by name) — see :func:`read_stances`; read once per text and reader."""
    read = doc.stances.get(reader)
    if read is None:
        stances, named = _stances_in(doc, reader)
        read = doc.stances[reader] = (tuple(stances), frozenset(named))
    return list(read[0]), set(read[1])


def _stances_in(doc: _Text, reader: Reader) -> tuple[list[Stance], set[str]]:
    if not doc.tokens or reader.names is None:
        return [], set()
    mentions = [(*doc.span(m), reader.name_options[_which(m)], m.start()) for m in reader.names.finditer(doc)]
    named = {mention[2] for mention in mentions}
    stances: list[Stance] = []
    if mentions:
        cues = [(*doc.span(m), CUES[_which(m)]) for m in _CUES.finditer(doc)]
        cue_starts = [cue[0] for cue in cues]
        inside = [False] * len(mentions)
        for i, (start, end, _, _) in enumerate(mentions):
            j = bisect.bisect_right(cue_starts, start) - 1
            inside[i] = j >= 0 and cues[j][1] >= end
        mentions = [mention for mention, covered in zip(mentions, inside, strict=True) if not covered]
        taken = {i for s, e, _, _ in mentions for i in range(s, e)} | {i for s, e, _ in cues for i in range(s, e)}
        ambiguous: list[tuple[int, int, tuple[str, ...], int]] = []
        pronouns = _pronoun_mentions(doc, mentions, taken, ambiguous)
        by_pronoun = {p[0] for p in pronouns}
        if pronouns:
            mentions = sorted(mentions + pronouns)
        mention_starts = [mention[0] for mention in mentions]
        covered = {i for s, e, _, _ in mentions for i in range(s, e)} | {i for s, e, _ in cues for i in range(s, e)}
        for index, (start, end, option, position) in enumerate(mentions):
            low, high = bisect.bisect_left(cue_starts, start - _REACH), bisect.bisect_right(cue_starts, end + _REACH)
            found = _nearest_cue(doc, cues[low:high], mentions, mention_starts, index)
            if found is not None:
                strong, stance, cue_start, cue_end, hedge, negated = found
                lo, hi = min(start, cue_start), max(end, cue_end)
                hedged = doc.hypothetical(position) or (not negated and _qualified(doc, lo, hi, covered))
                via = PRONOUN if start in by_pronoun else HEDGE if hedge else ""
                stances.append(Stance(option, stance, strong and not via, hedged, " ".join(doc.tokens[lo:hi]), via, hedge))
        stances += _resolved(doc, cues, mentions, ambiguous, stances, covered)
        stances += _headlines(doc, [m for m in mentions if m[0] not in by_pronoun])
    if reader.decisive is not None:
        for match in reader.decisive.finditer(doc):
            start, end = doc.span(match)
            if NEGATORS.isdisjoint(doc.tokens[max(0, start - 2):start]):
                option = reader.decisive_options[_which(match)]
                named.add(option)
                stances.append(Stance(option, REC, True, doc.hypothetical(match.start()), " ".join(doc.tokens[start:end])))
    return stances, named


def _qualified(doc: _Text, lo: int, hi: int, covered: set[int]) -> bool:
    """True when the clause around tokens [lo, hi) (up to a pause: , : ( ) or a clause break)
    holds a :data:`QUALIFIERS` word that is not part of a name or a cue."""
    while lo > 0 and doc.tokens[lo - 1] not in _PAUSES and doc.tokens[lo - 1] not in _BREAKS:
        lo -= 1
    while hi < len(doc.tokens) and doc.tokens[hi] not in _PAUSES and doc.tokens[hi] not in _BREAKS:
        hi += 1
    covered = covered | {i + k for i in range(lo, hi) for marker in _DISCOURSE if tuple(doc.tokens[i:i + len(marker)]) == marker
                         for k in range(len(marker))}
    covered |= {i + k for i in range(lo, hi - 2) if doc.tokens[i] in ("for", "on") and doc.tokens[i + 1] in _THIS
                and (doc.tokens[i + 2] in _DEPLOYMENT or (i + 3 < hi and doc.tokens[i + 3] in _DEPLOYMENT))
                for k in range(4 if i + 3 < hi and doc.tokens[i + 3] in _DEPLOYMENT else 3)}
    return any(doc.tokens[i] in QUALIFIERS and i not in covered for i in range(lo, hi))


_THIS = frozenset({"this", "our", "the", "my", "that", "a", "an"})
_DEPLOYMENT = frozenset({"system", "board", "host", "service", "deployment", "device", "app", "application", "endpoint",
                         "target", "track", "project", "phone", "product", "workload", "model", "case", "scenario", "team",
                         "run", "job", "training", "pipeline", "setup", "cluster", "server", "fleet", "use", "user", "users",
                         "box", "node", "gpu", "chip", "sensor"})
""""… is the better choice for this system": the deployment the lab is about, not a scope that narrows the claim."""
_ONLY_BEFORE = frozenset({"if", "when", "for", "at", "below", "above", "with", "under", "in", "once", "until", "after"})
_DISCOURSE = tuple(tuple(marker.split()) for marker in (
    "in the end", "at the end of the day", "in short", "in hindsight", "on reflection", "on balance", "on second thought",
    "on second thoughts", "in my view", "in my opinion", "at this point", "all in all", "in retrospect", "in fact",
    "on every axis", "on every front", "on every count", "on every metric", "in every way", "in every respect",
    "on all counts", "by far"))
"""Words that place a claim in the argument, not in a situation ("In the end, I'd rather keep Y"): never a qualifier."""


def _nearest_cue(doc: _Text, cues: Sequence[tuple[int, int, Cue]], mentions: Sequence[tuple[int, int, str, int]],
                 mention_starts: Sequence[int], index: int) -> tuple[bool, str, int, int, bool, bool] | None:
    """The cue among ``cues`` that applies to mention ``index`` — (strong, stance, start, end, hedge, negated) — or None."""
    start, end, option, _ = mentions[index]
    best = None
    for c_start, c_end, cue in cues:
        if cue.before:
            if c_end > start and not c_start <= start < c_end <= end:
                continue
            # a cue whose verb the name begins with ("you should keep | keep inference on the device") touches it
            lo, hi = min(c_end, start), start
        else:
            if c_start < end:
                continue
            lo, hi = end, c_start
        if hi - lo > cue.reach:
            continue
        between = range(bisect.bisect_left(mention_starts, lo), bisect.bisect_left(mention_starts, hi))
        if any(mentions[i][2] != option for i in between):
            continue  # a cue never reaches across a mention of another option
        if cue.filler_only and not FILLER.issuperset(doc.tokens[lo:hi]):
            continue
        if not doc.one_clause(lo, hi):  # the gap; a cue's own words ("is therefore rejected") never split it
            continue
        stance, strong = cue.stance, cue.strong
        if cue.before and stance == REC:
            words = doc.tokens[max(0, c_start - 4):c_start]
            while words and not _BREAKS.isdisjoint(words):
                words = words[1:]
            if not NEGATORS.isdisjoint(words):
                stance, strong = REJ, False  # "I do not think we should choose Y"
        candidate = (hi - lo, 0 if cue.before else 1, strong, stance, c_start, c_end, cue.hedge, cue.negated)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    return None if best is None else best[2:]


MAX_NAMED_TRIES = 50  # matches of one limitation or trigger examined, so a repeated phrase costs bounded time
# Words that mark one option of a caveat sentence as the main one ("… but the main one is …").
MAIN_MARKERS = frozenset(["main", "mainly", "chief", "chiefly", "primary", "primarily", "principal", "biggest", "largest",
                          "greatest", "foremost", "especially", "particularly", "mostly", "major", "key", "central",
                          "worst", "overriding", "dominant", "important", "serious"])
_PLURAL_MARKED = frozenset(["ones", "limitations", "risks", "caveats", "concerns", "issues", "weaknesses", "gaps", "problems"])
NAMED, MULTI, LISTED, NO_CONDITION = "named", "multi", "listed", "no condition"  # how a limitation or trigger was found


def _named(doc: _Text, scanner: _Scanner, others: Mapping[str, _Scanner], *, needs_trigger_cue: bool = False) -> str | None:
    """How ``scanner`` is stated: :data:`NAMED` in a sentence that is not a keyword list (and, for a
    trigger, says when to look again); :data:`MULTI` in a sentence naming :data:`LIST_SIZE` or more
    options of the list where this one is marked as the main one, or next to another option; else
    None, or why it did not count (:data:`LISTED` only in keyword lists, :data:`NO_CONDITION` a trigger
    without a condition)."""
    best: str | None = None
    for tries, match in enumerate(scanner.finditer(doc)):
        if tries >= MAX_NAMED_TRIES:
            break
        low, high = doc.bounds(match.start())
        sentence = doc.norm[low:high]
        if needs_trigger_cue and not (TRIGGER_CUE.search(sentence) or CHANGE_WORDS.search(
                doc.norm, max(low, match.start() - 24), min(match.end() + 40, high))):  # "a drop in the run count"
            best = best or NO_CONDITION
            continue
        count = sum(1 for other in others.values() if other.search(sentence))
        if count >= LIST_SIZE:
            if _marked_main(doc, match, scanner, others):
                best = MULTI
            elif best is None or best == NO_CONDITION:
                best = LISTED
            continue
        if count <= 1:
            return NAMED
        best = MULTI
    return best


def _marked_main(doc: _Text, match: re.Match[str], scanner: _Scanner, others: Mapping[str, _Scanner]) -> bool:
    """True when ``match`` sits in a clause (up to a pause or a clause break) that holds a
    :data:`MAIN_MARKERS` word, no plural ("the main ones are …") and no other option of the list."""
    lo, hi = doc.span(match)
    while lo > 0 and doc.tokens[lo - 1] not in _PAUSES and doc.tokens[lo - 1] not in _BREAKS:
        lo -= 1
    while hi < len(doc.tokens) and doc.tokens[hi] not in _PAUSES and doc.tokens[hi] not in _BREAKS:
        hi += 1
    words = doc.tokens[lo:hi]
    if MAIN_MARKERS.isdisjoint(words) or not _PLURAL_MARKED.isdisjoint(words):
        return False
    clause = " ".join(words)
    start = match.start() - sum(len(word) + 1 for word in doc.tokens[:lo])  # the match, in the clause's offsets
    end = start + len(match.group())
    # another option counts only outside this match ("the T4 numbers are not measured" also reads as unmeasured numbers)
    return not any(m.start() < start or m.end() > end for other in others.values() if other is not scanner
                   for m in other.pattern.finditer(clause))
