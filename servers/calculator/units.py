"""The curated unit names of calculator_convert_units, as sympy.physics.units expressions.

Unit expressions combine these names with `*`, `/`, `**` (or `^`) and numbers, e.g. `km/h`,
`m/s**2`, `kg*m/s^2`, `kWh`. Temperatures with an offset (degC, degF) convert only on their own.
sympy is imported when the table is first built (in the worker process).

Every unit is its exact definition (tests/calculator/test_unit_definitions.py holds each one with its source: the SI
brochure, NIST SP 811 and the 1959 international yard and pound, IAU 2012/2015, the 2019 SI's exact constants). Where
sympy's own quantity is wrong or dated the table defines the unit itself: sympy's nautical mile is 6076 ft (1851.9648
m, not 1852), its astronomical unit the pre-2012 149597870691 m, and its electronvolt, psi and mmHg are floats. A unit
defined by a measured constant (the dalton) holds a placeholder symbol, so that a conversion can tell whether the
constant cancels (exact) or not (`MEASURED` then gives its value and uncertainty).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp_sections.shared.ground.errors import invalid_input

# absolute scales and the affine ones: name -> (factor to kelvin, offset in kelvin)
TEMPERATURES: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "K": ((1, 1), (0, 1)),
    "kelvin": ((1, 1), (0, 1)),
    "degC": ((1, 1), (27315, 100)),
    "celsius": ((1, 1), (27315, 100)),
    "degF": ((5, 9), (45967, 180)),
    "fahrenheit": ((5, 9), (45967, 180)),
}
AFFINE_TEMPERATURES = frozenset({"degC", "celsius", "degF", "fahrenheit"})


@dataclass(frozen=True)
class Measured:
    """A measured constant a unit is defined by: its value in SI units (a decimal string) and how well it is known."""

    symbol: str  # the placeholder's name in unit_table's expressions
    unit: str  # the unit it defines, as a reader knows it
    value: str  # in SI units, as published
    si_unit: str
    uncertainty: str  # the standard uncertainty in the last digits, as published: 1.66053906660(50)e-27
    relative: str  # the relative standard uncertainty
    source: str

    def note(self) -> str:
        return (
            f"not exact: {self.unit} is a measured constant ({self.source}: {self.uncertainty} {self.si_unit}, "
            f"relative standard uncertainty {self.relative}), and the result carries that uncertainty"
        )


MEASURED: dict[str, Measured] = {
    "m_u": Measured(
        symbol="m_u",
        unit="the dalton (atomic mass constant m_u)",
        value="1.66053906660e-27",
        si_unit="kg",
        uncertainty="1.66053906660(50)e-27",
        relative="3.0e-10",
        source="CODATA 2018",
    ),
}


@cache
# Long: one literal table of the units, by kind; split, it would be harder to read and to check against the doc.
def unit_table() -> dict[str, Any]:
    """Accepted unit name → sympy quantity expression."""
    from sympy import Rational, Symbol, pi
    from sympy.physics import units as u

    day = u.day
    nautical_mile = 1852 * u.meter  # SI brochure (9th ed.) table 8; sympy's is 6076 ft
    astronomical_unit = 149_597_870_700 * u.meter  # IAU 2012 resolution B2; sympy's is the pre-2012 value
    lbf = Rational(45359237, 10**8) * Rational(980665, 10**5) * u.newton  # 1 lb × standard gravity, exactly
    dalton = Symbol("m_u", positive=True) * u.kilogram  # measured: MEASURED["m_u"]
    table: dict[str, Any] = {
        # length
        "m": u.meter,
        "meter": u.meter,
        "metre": u.meter,
        "km": u.kilometer,
        "cm": u.centimeter,
        "mm": u.millimeter,
        "um": u.micrometer,
        "nm": u.nanometer,
        "angstrom": u.angstrom,
        "mi": u.mile,
        "mile": u.mile,
        "yd": u.yard,
        "yard": u.yard,
        "ft": u.foot,
        "foot": u.foot,
        "inch": u.inch,
        "nmi": nautical_mile,
        "au": astronomical_unit,
        "ly": 299_792_458 * Rational(36525, 100) * day * u.meter / u.second,  # c × Julian year
        "pc": 648000 / pi * astronomical_unit,  # IAU 2015 resolution B2
        # mass
        "kg": u.kilogram,
        "g": u.gram,
        "gram": u.gram,
        "mg": u.milligram,
        "ug": u.microgram,
        "t": u.tonne,
        "tonne": u.tonne,
        "lb": u.pound,
        "pound": u.pound,
        "oz": u.pound / 16,
        "ounce": u.pound / 16,
        "Da": dalton,
        "dalton": dalton,
        # time
        "s": u.second,
        "second": u.second,
        "ms": u.millisecond,
        "us": u.microsecond,
        "ns": u.nanosecond,
        "min": u.minute,
        "minute": u.minute,
        "h": u.hour,
        "hour": u.hour,
        "day": day,
        "week": 7 * day,
        "year": Rational(36525, 100) * day,
        # area and volume
        "ha": u.hectare,
        "hectare": u.hectare,
        "acre": 43560 * u.foot**2,
        "L": u.liter,
        "l": u.liter,
        "liter": u.liter,
        "litre": u.liter,
        "mL": u.milliliter,
        "ml": u.milliliter,
        "cl": u.centiliter,
        "dl": u.deciliter,
        "gal": 231 * u.inch**3,
        "gallon": 231 * u.inch**3,
        # speed
        "mph": u.mile / u.hour,
        "kph": u.kilometer / u.hour,
        "knot": nautical_mile / u.hour,
        "kn": nautical_mile / u.hour,
        # force, energy, power, pressure
        "N": u.newton,
        "kN": 1000 * u.newton,
        "lbf": lbf,
        "J": u.joule,
        "kJ": 1000 * u.joule,
        "MJ": 10**6 * u.joule,
        "cal": Rational(4184, 1000) * u.joule,
        "kcal": 4184 * u.joule,
        "eV": Rational(1602176634, 10**28) * u.joule,  # e × 1 V, e exact since 2019
        "Wh": 3600 * u.joule,
        "kWh": 3_600_000 * u.joule,
        "W": u.watt,
        "kW": 1000 * u.watt,
        "MW": 10**6 * u.watt,
        "hp": 550 * u.foot * lbf / u.second,  # mechanical horsepower
        "Pa": u.pascal,
        "hPa": 100 * u.pascal,
        "kPa": 1000 * u.pascal,
        "MPa": 10**6 * u.pascal,
        "bar": u.bar,
        "mbar": u.bar / 1000,
        "atm": u.atmosphere,
        "psi": lbf / u.inch**2,
        "mmHg": Rational(133322387415, 10**9) * u.pascal,  # 13.5951 g/cm³ × 1 mm × standard gravity
        "torr": u.atmosphere / 760,
        # frequency and electricity
        "Hz": u.hertz,
        "kHz": 1000 * u.hertz,
        "MHz": 10**6 * u.hertz,
        "GHz": 10**9 * u.hertz,
        "V": u.volt,
        "mV": u.volt / 1000,
        "kV": 1000 * u.volt,
        "A": u.ampere,
        "mA": u.ampere / 1000,
        "ohm": u.ohm,
        "C": u.coulomb,
        "F": u.farad,
        "T": u.tesla,
        "Wb": u.weber,
        "mol": u.mole,
        # angle
        "rad": u.radian,
        "deg": u.degree,
        "degree": u.degree,
        # information
        "bit": u.bit,
        "B": u.byte,
        "byte": u.byte,
        "kB": 1000 * u.byte,
        "MB": 10**6 * u.byte,
        "GB": 10**9 * u.byte,
        "TB": 10**12 * u.byte,
        "KiB": u.kibibyte,
        "MiB": u.mebibyte,
        "GiB": u.gibibyte,
        "TiB": u.tebibyte,
        # absolute temperature (degC/degF are handled apart: they have an offset)
        "K": u.kelvin,
        "kelvin": u.kelvin,
    }
    return table


def unit_names() -> dict[str, Callable[[], Any]]:
    """Every unit name calculator_convert_units accepts, as name → factory (the shape `grammar.Grammar.names` expects,
    and the list an unknown name's INVALID_INPUT shows): the units of `unit_table`, and the temperature scales with an
    offset (converted apart, through TEMPERATURES), whose factory refuses them inside a unit expression."""

    def factory(value: Any) -> Callable[[], Any]:
        return lambda: value

    def alone(name: str) -> Callable[[], Any]:
        def refuse() -> Any:
            raise invalid_input(
                f"{name!r}: degC and degF have an offset and convert only on their own (e.g. degC to degF); "
                "use K for temperature differences inside compound units."
            )

        return refuse

    names = {name: factory(value) for name, value in unit_table().items()}
    return names | {name: alone(name) for name in sorted(AFFINE_TEMPERATURES)}


UNIT_NAMES_DOC = (
    "length m km cm mm um nm angstrom mi yd ft inch nmi au ly pc; mass kg g mg ug t lb oz Da; "
    "time s ms us ns min h day week year; area/volume ha acre L mL cl dl gal (US); speed mph kph knot; "
    "force N kN lbf; energy J kJ MJ cal kcal eV Wh kWh; power W kW MW hp; pressure Pa hPa kPa MPa bar mbar "
    "atm psi mmHg torr; frequency Hz kHz MHz GHz; electricity V mV kV A mA ohm C F T Wb; amount mol; "
    "angle rad deg; data bit B kB MB GB TB KiB MiB GiB TiB; temperature K degC degF (long names such as "
    "meter, metre, mile, pound, dalton, hour, liter, kelvin, celsius, fahrenheit also work)"
)
UNIT_DEFINITIONS_DOC = (
    "nmi 1852 m, au 149597870700 m (IAU 2012), ly c × 365.25 d, pc 648000/pi au, year 365.25 d (Julian), "
    "acre 43560 ft², gal 231 in³, lbf 0.45359237 kg × 9.80665 m/s², cal 4.184 J (thermochemical), "
    "eV 1.602176634e-19 J, hp 550 ft·lbf/s, mmHg 133.322387415 Pa, torr atm/760; Da is measured (CODATA 2018: "
    "a conversion through it has exact null and a note)"
)
