"""A ten-document KB on unrelated everyday subjects, written for these tests."""

DOCS = {
    "health/cpr.md": """
        ---
        title: Cardiopulmonary Resuscitation
        tags: [first-aid, emergency]
        description: Chest compressions and rescue breaths for cardiac arrest.
        ---
        # Cardiopulmonary Resuscitation

        ## When to start
        If an adult collapses, does not respond and is not breathing normally, call the
        emergency number and begin chest compressions straight away.

        ## Compressions
        Push hard and fast in the centre of the chest, about five to six centimetres deep,
        at 100 to 120 compressions a minute. Let the chest recoil fully between pushes.
        An automated external defibrillator should be used as soon as one arrives.
        """,
    "kitchen/pasta.md": """
        # Cooking Dried Pasta

        Bring a large pot of salted water to a rolling boil before adding the pasta.
        Stir during the first minute so the strands do not stick together. Taste a piece
        a minute before the packet time; it should be firm to the bite (al dente).
        Keep a cup of the starchy cooking water to loosen the sauce.
        """,
    "garage/bicycle-chain.md": """
        # Bicycle Chain Care

        A dirty chain wears the cassette and chainrings quickly. Wipe it with a rag,
        scrub it with degreaser, rinse and let it dry. Apply one drop of lubricant per
        roller, spin the cranks, then wipe off the excess so dust does not stick.
        Replace the chain once a checker tool shows 0.5 percent elongation.
        """,
    "money/taxes.md": """
        # Filing an Income Tax Return

        Gather payslips, bank interest statements and receipts for deductible expenses.
        Most people file online before the annual deadline; late filing brings a penalty.
        Keep copies of everything for at least six years in case of an audit.
        """,
    "garden/tomatoes.md": """
        # Growing Tomatoes

        Tomatoes need six to eight hours of direct sun. Plant seedlings deep, up to the
        first leaves, and water at the base rather than on the foliage to prevent blight.
        Pinch out side shoots on cordon varieties and feed weekly once fruit sets.
        """,
    "code/packaging.md": """
        # Python Packaging Errors

        ## Build failures
        The build backend reports ERR-4471 when the project metadata lacks a version.
        Declare the version in pyproject.toml or mark it as dynamic.

        ## Editable installs
        An editable install links the source tree into the environment, so changes take
        effect without reinstalling.
        """,
    "sky/eclipses.md": """
        # Solar Eclipses

        A solar eclipse happens when the Moon passes between the Sun and the Earth and
        casts its shadow on the surface. Never look at the Sun without certified filters,
        even when most of it is covered.
        """,
    "music/piano-practice.md": """
        # Practising the Piano

        Short daily sessions beat one long weekly session. Practise hands separately at a
        slow tempo with a metronome, then join them, raising the tempo a few beats at a time.
        """,
    "pets/dog-recall.md": """
        # Teaching a Dog to Come When Called

        Start indoors with few distractions. Say the cue once in a happy voice and reward
        the dog generously the moment it arrives. Never call the dog to punish it.
        """,
    "kitchen/coffee.md": """
        # Brewing Pour-Over Coffee

        Use about sixty grams of medium-fine ground coffee per litre of water just off the
        boil. Bloom the grounds with a little water for thirty seconds, then pour slowly
        in circles. A total brew time near three minutes is a good starting point.
        """,
}
