"""The general domain's knowledge subjects (geography to law): MMLU-like four-option items drawn from the banks.

It must never draw from an item's generator in a new order, nor reorder a bank: every seed's items depend on both.
"""

from __future__ import annotations

from fractions import Fraction

from agentbalance.worlds.simulated.questions.banks import (
    BiologyBank,
    ChemistryBank,
    ClinicalBank,
    GeographyBank,
    MarketingBank,
    MoralScenariosBank,
    NutritionBank,
    ProfessionalLawBank,
    WorldHistoryBank,
    load_bank,
)
from agentbalance.worlds.simulated.questions.common import (
    Draft,
    Rng,
    ask_bank,
    ask_category,
    between,
    exact,
    lead_in,
    magnitude,
    names,
    numeric_wrong,
    pick,
    ratio,
    three_wrong,
    two_names,
    with_lead_in,
)

# Answer grids the code indexes by position (not bank data: their order is part of the logic).
_VERDICTS = ("Wrong, Wrong", "Wrong, Not wrong", "Not wrong, Wrong", "Not wrong, Not wrong")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_TORT_VERDICTS = ("Assault only", "Battery only", "Both assault and battery", "Neither assault nor battery")
_BURGLARY_VERDICTS = (
    "burglary",
    "larceny, but not burglary",
    "attempted larceny, but not burglary",
    "robbery",
)


def high_school_geography(rng: Rng) -> Draft:
    bank = load_bank(GeographyBank)
    draw = rng.random()
    if draw < 0.3:
        capital = pick(rng, bank.capitals)
        stem = pick(rng, bank.capital_stems).format(country=capital.country)
        return Draft(f"{lead_in(rng, bank.courses)} {stem}", capital.capital, capital.wrong, capital.offset)
    if draw < 0.5:
        river = pick(rng, bank.rivers)
        stem = pick(rng, bank.river_stems).format(city=river.city)
        return Draft(f"{lead_in(rng, bank.courses)} {stem}", river.river, river.wrong, river.offset)
    return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.55)


def nutrition(rng: Rng) -> Draft:
    bank = load_bank(NutritionBank)
    draw = rng.random()
    lead = lead_in(rng, bank.courses)
    if draw < 0.3:
        deficiency = pick(rng, bank.deficiencies)
        nutrient, condition, offset = deficiency.nutrient, deficiency.condition, deficiency.offset
        if rng.random() < 0.5:
            stem = pick(
                rng,
                (
                    f"A prolonged dietary deficiency of {nutrient} causes which condition?",
                    f"Which condition is classically caused by a lack of {nutrient}?",
                ),
            )
            return Draft(f"{lead} {stem}", condition, deficiency.wrong_conditions, offset)
        stem = f"{condition[0].upper()}{condition[1:]} is classically caused by a deficiency of which nutrient?"
        return Draft(f"{lead} {stem}", nutrient, deficiency.wrong_nutrients, offset + 0.2)
    if draw < 0.55:
        name = pick(rng, names())
        fat, protein, carbs = between(rng, 2, 35), between(rng, 2, 45), between(rng, 5, 90)
        alcohol = between(rng, 8, 20) if rng.random() < 0.4 else 0
        gold = 9 * fat + 4 * protein + 4 * carbs + 7 * alcohol
        meal = pick(rng, bank.meals)
        text = f"{name}'s {meal} contains {fat} g of fat, {protein} g of protein and {carbs} g of carbohydrate"
        if alcohol:
            text += f", and the glass of wine with it adds {alcohol} g of alcohol"
        question = f"{text}. Approximately how many kilocalories does this provide in total?"
        candidates = [4 * (fat + protein + carbs) + 7 * alcohol, gold + 5 * protein, gold - 7 * alcohol + 9 * alcohol]
        wrong = numeric_wrong(gold, candidates, fmt=lambda v: f"{exact(v)} kcal")
        return Draft(question, f"{gold} kcal", wrong, 0.3 + 0.4 * bool(alcohol) + magnitude(gold, free=3))
    if draw < 0.7:
        name = pick(rng, names())
        weight = between(rng, 48, 115)
        height = Fraction(between(rng, 30, 39) * 5, 100)
        bmi = round(weight / float(height) ** 2, 1)
        question = (
            f"{name} weighs {weight} kg and is {float(height):.2f} m tall. What is {name}'s body mass index (BMI)?"
        )
        candidates = [round(weight / float(height) / 2, 1), round(weight / float(height), 1), round(bmi + 2.5, 1)]
        gold = f"{bmi:.1f} kg/m²"
        wrong = three_wrong(gold, [f"{c:.1f} kg/m²" for c in candidates], lambda k: f"{bmi + 1.1 * k:.1f} kg/m²")
        return Draft(question, gold, wrong, 0.4)
    return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.5)


def marketing(rng: Rng) -> Draft:
    bank = load_bank(MarketingBank)
    company = f"{pick(rng, bank.company_prefixes)}{pick(rng, bank.company_suffixes)}"
    product = pick(rng, bank.products)
    draw = rng.random()
    if draw < 0.3:
        pricing = pick(rng, bank.pricing)
        whole = between(rng, 9, 899)
        scene = pricing.scene.format(co=company, product=product, whole=whole, next=whole + 1)
        return Draft(f"{scene} Which pricing strategy is this?", pricing.strategy, pricing.wrong, pricing.offset)
    if draw < 0.5:
        segmentation = pick(rng, bank.segments)
        question = (
            f"{company} groups the buyers of its {product} by {pick(rng, segmentation.bases)}. "
            "Which kind of market segmentation is this?"
        )
        return Draft(question, segmentation.segment, segmentation.wrong, 0.1)
    if draw < 0.7:
        stage = pick(rng, bank.life_cycle)
        scene = stage.scene.format(co=company, product=product)
        question = f"Market data show that {scene}. Which stage of the product life cycle is this {product} in?"
        return Draft(question, stage.stage, stage.wrong, 0.1)
    if draw < 0.88:
        growth = pick(rng, bank.ansoff)
        scene = growth.scene.format(co=company, product=product, market=pick(rng, bank.markets))
        return Draft(
            f"{scene} In the Ansoff matrix, which growth strategy is this?", growth.strategy, growth.wrong, 0.4
        )
    return ask_category(rng, bank.courses, bank.category)


def world_history(rng: Rng) -> Draft:
    bank = load_bank(WorldHistoryBank)
    if rng.random() < 0.45:
        dated = pick(rng, bank.years)
        event, year, offset = dated.event, dated.year, dated.offset
        stem = pick(rng, bank.year_stems).format(event=event, Event=event[0].upper() + event[1:])
        near, mid, far = between(rng, 1, 6), between(rng, 10, 40), between(rng, 50, 150)
        years = [year + d * (1 if rng.random() < 0.5 else -1) for d in (near, mid, far)]
        wrong = numeric_wrong(year, years)
        return Draft(f"{lead_in(rng, bank.courses)} {stem}", str(year), wrong, offset + 0.3 * (near <= 3))
    return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.35)


def high_school_biology(rng: Rng) -> Draft:
    bank = load_bank(BiologyBank)
    draw = rng.random()
    if draw < 0.4:
        return with_lead_in(rng, bank.courses, _biology_cross)
    return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.4)


def _biology_cross(rng: Rng) -> Draft:
    """Mendelian crosses: a dihybrid cross is visibly more work than a monohybrid one."""
    bank = load_bank(BiologyBank)
    name = pick(rng, names())
    if rng.random() < 0.7:
        trait = pick(rng, bank.traits)
        organism, dominant, recessive, letter = trait.organism, trait.dominant, trait.recessive, trait.letter
        cross = pick(rng, bank.monohybrid)
        geno = {"A": letter, "a": letter.lower()}
        first = "".join(geno[c] for c in cross.first)
        second = "".join(geno[c] for c in cross.second)
        target = {
            "recessive": recessive,
            "dominant": dominant,
            "heterozygous": f"the genotype {letter}{letter.lower()}",
        }[cross.asked]
        question = (
            f"In the {organism}, the allele for {dominant} ({letter}) is completely dominant over the allele for "
            f"{recessive} ({letter.lower()}). {name} crosses a {first} {organism} with a {second} one. "
            f"What fraction of the offspring are expected to have {target}?"
        )
        return Draft(question, ratio(cross.gold), cross.wrong, cross.extra)
    dihybrid = pick(rng, bank.dihybrid)
    question = (
        f"In garden peas, round seeds (R) are dominant over wrinkled seeds (r) and yellow seeds (Y) are dominant "
        f"over green seeds (y), and the two genes assort independently. {name} crosses a {dihybrid.first} plant "
        f"with a {dihybrid.second} plant. What fraction of the offspring are expected to have {dihybrid.asked}?"
    )
    return Draft(question, ratio(dihybrid.gold), dihybrid.wrong, dihybrid.extra)


def _concentration(power: int) -> str:
    return exact(Fraction(1, 10**power))


def high_school_chemistry(rng: Rng) -> Draft:
    bank = load_bank(ChemistryBank)
    draw = rng.random()
    lead = lead_in(rng, bank.courses)
    if draw < 0.3:
        power = between(rng, 1, 4)
        if rng.random() < 0.5:
            acid = pick(rng, bank.acids)
            dilution = between(rng, 0, 2)
            text = f"A solution of {acid.name} ({acid.formula}) has a concentration of {_concentration(power)} mol/L"
            if dilution:
                text += f" and is then diluted by a factor of {10**dilution} with pure water"
            gold = power + dilution
            question = f"{lead} {text}. Assuming complete dissociation at 25 °C, what is its pH?"
            wrong = numeric_wrong(gold, [power if dilution else gold + 1, 14 - gold, gold + 2], fmt=str)
            return Draft(question, str(gold), wrong, 0.4 * bool(dilution))
        base = pick(rng, bank.bases)
        gold = 14 - power
        question = (
            f"{lead} What is the pH at 25 °C of a {_concentration(power)} mol/L solution of {base.name} "
            f"({base.formula}), assuming complete dissociation?"
        )
        return Draft(question, str(gold), numeric_wrong(gold, [power, gold - 1, 7 + power], fmt=str), 0.4)
    if draw < 0.55:
        picked = pick(rng, bank.substances)
        substance, formula, molar = picked.name, picked.formula, picked.molar_mass
        moles = Fraction(pick(rng, (1, 2, 3, 4, 5, 6, 8, 10, 12, 15)), pick(rng, (1, 2, 4)))
        mass = moles * molar
        unit = " mol"
        if rng.random() < 0.5:
            question = f"{lead} How many moles are there in {exact(mass)} g of {substance} ({formula})?"
            candidates = [moles * 2, molar / mass, moles / 2, moles + 1]
            wrong = numeric_wrong(moles, candidates, fmt=lambda v: f"{exact(v)}{unit}")
            return Draft(question, f"{exact(moles)}{unit}", wrong, 0.2 + magnitude(molar, free=2, weight=0.2))
        question = f"{lead} What is the mass of {exact(moles)} mol of {substance} ({formula})?"
        candidates = [molar / moles, mass / 2, mass + molar]
        wrong = numeric_wrong(mass, candidates, fmt=lambda v: f"{exact(v)} g")
        return Draft(question, f"{exact(mass)} g", wrong, 0.1 + magnitude(mass, free=2, weight=0.2))
    return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.5)


def clinical_knowledge(rng: Rng) -> Draft:
    bank = load_bank(ClinicalBank)
    draw = rng.random()
    name = pick(rng, names())
    if draw < 0.2:
        diastolic = between(rng, 60, 105)
        systolic = diastolic + 3 * between(rng, 10, 25)
        gold = diastolic + (systolic - diastolic) // 3
        question = (
            f"A patient, {name}, has a blood pressure of {systolic}/{diastolic} mmHg. Using the usual bedside "
            "approximation, what is the mean arterial pressure?"
        )
        candidates = [(systolic + diastolic) // 2, systolic - diastolic, systolic - (systolic - diastolic) // 3]
        return Draft(question, f"{gold} mmHg", numeric_wrong(gold, candidates, fmt=lambda v: f"{exact(v)} mmHg"), 0.5)
    if draw < 0.4:
        weight = 5 * between(rng, 8, 24)
        dose = pick(rng, (2, 4, 5, 10, 15))
        strength = pick(rng, (10, 20, 25, 50))
        gold = Fraction(weight * dose, strength)
        question = (
            f"{name}, who weighs {weight} kg, is prescribed a drug at {dose} mg/kg. The drug is supplied as "
            f"{strength} mg/mL. What volume should be given?"
        )
        candidates = [gold * 10, Fraction(weight * strength, dose), gold / 2]
        wrong = numeric_wrong(gold, candidates, fmt=lambda v: f"{exact(v)} mL")
        return Draft(question, f"{exact(gold)} mL", wrong, 0.7 + magnitude(weight * dose, free=3, weight=0.2))
    return ask_bank(rng, bank.courses, bank.facts, bank.categories, 0.2)


def moral_scenarios(rng: Rng) -> Draft:
    bank = load_bank(MoralScenariosBank)
    first_wrong, second_wrong = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    first_name, second_name = two_names(rng)
    first = pick(rng, bank.morally_wrong if first_wrong else bank.not_morally_wrong)
    second = pick(rng, bank.morally_wrong if second_wrong else bank.not_morally_wrong)
    first_act, first_subtle, second_act, second_subtle = first.act, first.subtle, second.act, second.subtle

    def verdict(a: bool, b: bool) -> str:
        return _VERDICTS[2 * (not a) + (not b)]

    flips = [verdict(not first_wrong, second_wrong), verdict(first_wrong, not second_wrong)]
    if second_subtle and not first_subtle:
        flips.reverse()
    wrong = (flips[0], flips[1], verdict(not first_wrong, not second_wrong))
    question = (
        f"{pick(rng, bank.stems)} Scenario 1: {first_act.format(n=first_name)} "
        f"Scenario 2: {second_act.format(n=second_name)}"
    )
    return Draft(question, verdict(first_wrong, second_wrong), wrong, 0.45 * (first_subtle + second_subtle))


def professional_law(rng: Rng) -> Draft:
    a, b = two_names(rng)
    kind = int(rng.integers(5))
    if kind == 0:
        item, price = pick(rng, load_bank(ProfessionalLawBank).items), 10 * between(rng, 8, 45)
        day = between(rng, 0, 2)
        first, second, third = _DAYS[day], _DAYS[day + 1], _DAYS[day + 2]
        offer = f"{a} wrote to {b} offering to sell {a}'s used {item} for ${price}."
        if rng.random() < 0.6:
            question = (
                f"{offer} On {first}, {b} mailed a letter accepting the offer. On {second}, before the acceptance "
                f"arrived, {a} telephoned {b} to revoke the offer. The acceptance reached {a} on {third}. "
                f"Is there a contract between {a} and {b}?"
            )
            gold = "Yes, because the acceptance took effect when it was mailed."
            wrong = (
                "No, because the revocation was communicated before the acceptance was received.",
                f"No, because {a} could revoke the offer at any time before learning of the acceptance.",
                "Yes, because an offer made in writing cannot be revoked.",
            )
            return Draft(question, gold, wrong, 0.4)
        question = (
            f"{offer} On {first}, {a} telephoned {b} to revoke the offer. On {second}, {b} mailed a letter accepting "
            f"it anyway. Is there a contract between {a} and {b}?"
        )
        gold = "No, because the offer was revoked before it was accepted."
        wrong = (
            "Yes, because the acceptance took effect when it was mailed.",
            "Yes, because a written offer cannot be revoked by telephone.",
            "No, because an acceptance is effective only when the offeror receives it.",
        )
        return Draft(question, gold, wrong, 0.0)
    if kind == 1:
        price, extra = 1000 * between(rng, 8, 40), 500 * between(rng, 2, 12)
        if rng.random() < 0.6:
            question = (
                f"{a}, a builder, agreed in writing to build a garage for {b} for ${price:,}. Halfway through, "
                f"{a} said the job was costing more than expected and refused to continue unless {b} promised an extra "
                f"${extra:,}. {b} promised, {a} finished the work, and {b} then paid only ${price:,}. If {a} sues for "
                f"the extra ${extra:,}, {a} will most likely"
            )
            gold = f"lose, because {a} gave no new consideration for the promise of extra pay."
            wrong = (
                f"win, because {b} freely agreed to the modification.",
                "win, because a modification of a contract needs no consideration.",
                "lose, because the modification was not in writing.",
            )
            return Draft(question, gold, wrong, 0.2)
        question = (
            f"{a}, a furniture maker, agreed in writing to sell {b} 400 office chairs for ${price:,}. Before delivery "
            f"the cost of steel rose, and {a} asked in good faith for an extra ${extra:,}. {b} agreed in a signed "
            f"email, took delivery, and then paid only ${price:,}. If {a} sues for the extra ${extra:,}, {a} will most "
            "likely"
        )
        gold = "win, because a good-faith modification of a contract for the sale of goods needs no consideration."
        wrong = (
            f"lose, because {a} gave no new consideration for the promise of extra pay.",
            f"lose, because {a} was already bound to deliver the chairs at the agreed price.",
            "win, because the rise in the cost of steel made the original contract void.",
        )
        return Draft(question, gold, wrong, 0.7)
    if kind == 2:
        store = pick(rng, ("jewellery shop", "petrol station", "pharmacy", "bakery", "bookshop", "bank branch"))
        witness = pick(rng, [n for n in names() if n not in (a, b)])
        variant = int(rng.integers(3))
        if variant == 0:
            question = (
                f"At {a}'s trial for robbing a {store}, the prosecution calls {witness}, who testifies that the day "
                f"after the robbery {b} told {witness}: 'I saw {a} run out of the {store} with a bag of cash.' {b} is "
                f"available but is not called. {a} objects. The testimony is"
            )
            gold = "inadmissible hearsay."
            wrong = (
                "admissible as a present sense impression.",
                f"admissible because {b} is available to testify.",
                "admissible as a statement of an opposing party.",
            )
            return Draft(question, gold, wrong, 0.2)
        if variant == 1:
            question = (
                f"At {a}'s trial for robbing a {store}, the prosecution calls {witness}, who testifies that the next "
                f"morning {a} said to {witness}: 'I robbed the {store} last night.' {a} objects. The testimony is"
            )
            gold = "admissible as a statement of an opposing party."
            wrong = (
                "inadmissible hearsay.",
                f"admissible only if {a} chooses to testify.",
                f"inadmissible because {a} has a privilege against self-incrimination.",
            )
            return Draft(question, gold, wrong, 0.3)
        question = (
            f"In a civil suit after a collision outside a {store}, {witness} testifies that seconds after a van struck "
            f"a cyclist, {b}, still shaking and screaming, shouted: 'The van ran the red light!' The testimony is "
            "offered to prove that the van ran the red light. It is"
        )
        gold = "admissible as an excited utterance."
        wrong = (
            "inadmissible hearsay.",
            f"admissible only if {b} is unavailable to testify.",
            "admissible as a dying declaration.",
        )
        return Draft(question, gold, wrong, 0.4)
    if kind == 3:
        weapon = pick(rng, ("a baseball bat", "a walking stick", "a rolled-up umbrella", "a broom handle"))
        variant = int(rng.integers(4))
        scenes = (
            f"{a}, intending only to frighten {b}, swung {weapon} at {b} and deliberately missed by a few inches. {b} "
            "saw the swing coming and was terrified, but was not touched.",
            f"As a joke, {a} crept up behind {b} and struck {b} on the back with {weapon}. {b} never saw it coming but "
            "was bruised and offended.",
            f"{a} swung {weapon} at {b}, who saw it coming and tried to duck, and struck {b} on the arm.",
            f"{a} swung {weapon} at {b}, who was asleep on a park bench, deliberately missing by a few inches. {b} "
            "never woke up and learned of it only weeks later.",
        )
        gold_index = (0, 1, 2, 3)[variant]
        order = ((2, 3, 1), (2, 3, 0), (0, 1, 3), (0, 1, 2))[variant]
        question = f"{scenes[variant]} Which intentional tort, if any, has {a} committed against {b}?"
        wrong = tuple(_TORT_VERDICTS[j] for j in order)
        return Draft(question, _TORT_VERDICTS[gold_index], wrong, 0.2 + 0.4 * (variant == 3))
    thing = pick(rng, ("television", "laptop", "watch", "jewellery box", "painting"))
    variant = int(rng.integers(4))
    scenes = (
        f"Late one night, {a} opened the unlocked front door of {b}'s house and went in, intending to steal {b}'s "
        f"{thing}. {a} was arrested in the hallway before taking anything.",
        f"Late one night, {b} invited {a} into {b}'s house for a drink. Once inside, {a} decided to steal {b}'s "
        f"{thing} and left with it while {b} was out of the room.",
        f"At noon, {a} broke a window of {b}'s house, climbed in and took {b}'s {thing}.",
        f"At noon, {a} broke a window of {b}'s house and climbed in to steal {b}'s {thing}, but was arrested before "
        "taking anything.",
    )
    gold_index = (0, 1, 1, 2)[variant]
    order = ((2, 1, 3), (0, 3, 2), (0, 3, 2), (0, 1, 3))[variant]
    question = f"{scenes[variant]} Applying the common-law definitions, {a} is guilty of"
    wrong = tuple(_BURGLARY_VERDICTS[j] for j in order)
    return Draft(question, _BURGLARY_VERDICTS[gold_index], wrong, 0.3 + 0.4 * (variant >= 2))
