"""The curated unit names of calculator_convert_units, as sympy.physics.units expressions.

Unit expressions combine these names with `*`, `/`, `**` (or `^`) and numbers, e.g. `km/h`,
`m/s**2`, `kg*m/s^2`, `kWh`. Temperatures with an offset (degC, degF) convert only on their own.
sympy is imported when the table is first built (in the worker process).
"""

from __future__ import annotations

from collections.abc import Callable
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


@cache
# Long: one literal table of the units, by kind; split, it would be harder to read and to check against the doc.
def unit_table() -> dict[str, Any]:
    """Accepted unit name → sympy quantity expression."""
    from sympy import Rational, pi
    from sympy.physics import units as u

    day = u.day
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
        "nmi": u.nautical_mile,
        "au": u.astronomical_unit,
        "ly": u.lightyear,
        "pc": 648000 / pi * u.astronomical_unit,
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
        "knot": u.nautical_mile / u.hour,
        "kn": u.nautical_mile / u.hour,
        # force, energy, power, pressure
        "N": u.newton,
        "kN": 1000 * u.newton,
        "lbf": Rational(44482216152605, 10**13) * u.newton,
        "J": u.joule,
        "kJ": 1000 * u.joule,
        "MJ": 10**6 * u.joule,
        "cal": Rational(4184, 1000) * u.joule,
        "kcal": 4184 * u.joule,
        "eV": u.electronvolt,
        "Wh": 3600 * u.joule,
        "kWh": 3_600_000 * u.joule,
        "W": u.watt,
        "kW": 1000 * u.watt,
        "MW": 10**6 * u.watt,
        "hp": Rational(74569987158227022, 10**14) * u.watt,
        "Pa": u.pascal,
        "hPa": 100 * u.pascal,
        "kPa": 1000 * u.pascal,
        "MPa": 10**6 * u.pascal,
        "bar": u.bar,
        "mbar": u.bar / 1000,
        "atm": u.atmosphere,
        "psi": u.psi,
        "mmHg": u.mmHg,
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
    "length m km cm mm um nm angstrom mi yd ft inch nmi au ly pc; mass kg g mg ug t lb oz; "
    "time s ms us ns min h day week year; area/volume ha acre L mL cl dl gal (US); speed mph kph knot; "
    "force N kN lbf; energy J kJ MJ cal kcal eV Wh kWh; power W kW MW hp; pressure Pa hPa kPa MPa bar mbar "
    "atm psi mmHg torr; frequency Hz kHz MHz GHz; electricity V mV kV A mA ohm C F T Wb; amount mol; "
    "angle rad deg; data bit B kB MB GB TB KiB MiB GiB TiB; temperature K degC degF (long names such as "
    "meter, metre, mile, pound, hour, liter, kelvin, celsius, fahrenheit also work)"
)
