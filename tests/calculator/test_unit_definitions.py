"""calculator_convert_units against the authoritative definition of every unit it converts with, through the official
client in memory (real sympy in the worker). An outside tester found sympy's nautical mile (6076 ft: 1 nmi = 1851.9648
m, and 1 kn = 1.8519648 km/h), its pre-2012 astronomical unit (149597870.691 km), and `exact` fields that were rounded
floats (psi → bar '0.0689475729316836', eV → J '1.60217663400000e-19').

Sources: SI = The International System of Units, BIPM SI brochure, 9th edition (2019), tables 7 (prefixes), 4 (derived
units) and 8 (non-SI units accepted for use with the SI); SI-2019 = the 2019 redefinition, whose defining constants are
exact (e = 1.602176634e-19 C, h, k, N_A, c = 299792458 m/s); 1959 = the international yard and pound agreement (yd =
0.9144 m, lb = 0.45359237 kg), as NIST SP 811 (2008) appendix B.9 lists its units; CGPM-1901 = standard gravity g_n =
9.80665 m/s²; IAU-2012 = IAU resolution B2 (2012); IAU-2015 = IAU resolution B2 (2015); IAU = the Julian year of
365.25 days the IAU's light-year uses; IEC = IEC 80000-13 (binary prefixes); CODATA-2018 = measured constants, 2018
adjustment.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import sympy
from mcp import Client
from sympy.parsing.sympy_parser import parse_expr

from mcp_sections.servers.calculator.units import unit_table
from tests.stdio import data_of, text_of

F = Fraction
PI = sympy.pi
INCH = F("0.0254")  # 1959
FOOT = 12 * INCH
LB = F("0.45359237")  # 1959
G_N = F("9.80665")  # CGPM-1901
LBF = LB * G_N
AU = 149_597_870_700  # IAU-2012
JULIAN_YEAR = F(36525, 100) * 86400  # IAU
C = 299_792_458  # SI-2019

# name → (its value in the SI unit, that unit, the source of the definition); a value with pi is a sympy expression
REFERENCE: dict[str, tuple[Any, str, str]] = {
    # length
    "m": (1, "m", "SI base unit"),
    "meter": (1, "m", "SI base unit"),
    "metre": (1, "m", "SI base unit"),
    "km": (1000, "m", "SI prefix (table 7)"),
    "cm": (F(1, 100), "m", "SI prefix"),
    "mm": (F(1, 1000), "m", "SI prefix"),
    "um": (F(1, 10**6), "m", "SI prefix"),
    "nm": (F(1, 10**9), "m", "SI prefix"),
    "angstrom": (F(1, 10**10), "m", "NIST SP 811 B.9: 1 Å = 1e-10 m"),
    "mi": (5280 * FOOT, "m", "1959: international mile, 1609.344 m"),
    "mile": (5280 * FOOT, "m", "1959"),
    "yd": (F("0.9144"), "m", "1959"),
    "yard": (F("0.9144"), "m", "1959"),
    "ft": (F("0.3048"), "m", "1959"),
    "foot": (F("0.3048"), "m", "1959"),
    "inch": (INCH, "m", "1959"),
    "nmi": (1852, "m", "SI table 8: nautical mile = 1852 m (International Hydrographic Conference, 1929)"),
    "au": (AU, "m", "IAU-2012 B2 (SI table 8): 149597870700 m exactly"),
    "ly": (C * JULIAN_YEAR, "m", "IAU: c × Julian year = 9460730472580800 m"),
    "pc": (648000 / PI * AU, "m", "IAU-2015 B2: 648000/pi au"),
    # mass
    "kg": (1, "kg", "SI base unit"),
    "g": (F(1, 1000), "kg", "SI prefix"),
    "gram": (F(1, 1000), "kg", "SI prefix"),
    "mg": (F(1, 10**6), "kg", "SI prefix"),
    "ug": (F(1, 10**9), "kg", "SI prefix"),
    "t": (1000, "kg", "SI table 8: tonne"),
    "tonne": (1000, "kg", "SI table 8"),
    "lb": (LB, "kg", "1959: avoirdupois pound"),
    "pound": (LB, "kg", "1959"),
    "oz": (LB / 16, "kg", "NIST SP 811 B.9: avoirdupois ounce = lb/16 = 28.349523125 g"),
    "ounce": (LB / 16, "kg", "NIST SP 811 B.9"),
    "Da": (F("1.66053906660e-27"), "kg", "CODATA-2018: m_u = 1.66053906660(50)e-27 kg, measured"),
    "dalton": (F("1.66053906660e-27"), "kg", "CODATA-2018, measured"),
    # time
    "s": (1, "s", "SI base unit"),
    "second": (1, "s", "SI base unit"),
    "ms": (F(1, 1000), "s", "SI prefix"),
    "us": (F(1, 10**6), "s", "SI prefix"),
    "ns": (F(1, 10**9), "s", "SI prefix"),
    "min": (60, "s", "SI table 8"),
    "minute": (60, "s", "SI table 8"),
    "h": (3600, "s", "SI table 8"),
    "hour": (3600, "s", "SI table 8"),
    "day": (86400, "s", "SI table 8"),
    "week": (7 * 86400, "s", "7 days"),
    "year": (JULIAN_YEAR, "s", "IAU: Julian year, 365.25 d"),
    # area and volume
    "ha": (10**4, "m**2", "SI table 8: hectare"),
    "hectare": (10**4, "m**2", "SI table 8"),
    "acre": (43560 * FOOT**2, "m**2", "NIST SP 811 B.9: acre = 43560 ft² (international foot) = 4046.8564224 m²"),
    "L": (F(1, 1000), "m**3", "SI table 8: litre = 1 dm³ (CGPM 1964)"),
    "l": (F(1, 1000), "m**3", "SI table 8"),
    "liter": (F(1, 1000), "m**3", "SI table 8"),
    "litre": (F(1, 1000), "m**3", "SI table 8"),
    "mL": (F(1, 10**6), "m**3", "SI prefix"),
    "ml": (F(1, 10**6), "m**3", "SI prefix"),
    "cl": (F(1, 10**5), "m**3", "SI prefix"),
    "dl": (F(1, 10**4), "m**3", "SI prefix"),
    "gal": (231 * INCH**3, "m**3", "NIST SP 811 B.9: US liquid gallon = 231 in³ = 3.785411784 L"),
    "gallon": (231 * INCH**3, "m**3", "NIST SP 811 B.9"),
    # speed
    "mph": (5280 * FOOT / 3600, "m/s", "1959: mile per hour = 0.44704 m/s"),
    "kph": (F(1000, 3600), "m/s", "SI: km/h"),
    "knot": (F(1852, 3600), "m/s", "SI table 8 note: 1 knot = 1 nmi/h = 1852/3600 m/s"),
    "kn": (F(1852, 3600), "m/s", "SI table 8 note"),
    # force, energy, power, pressure
    "N": (1, "kg*m/s**2", "SI table 4: newton"),
    "kN": (1000, "kg*m/s**2", "SI prefix"),
    "lbf": (LBF, "N", "1959 and CGPM-1901: lb × g_n = 4.4482216152605 N (NIST SP 811 B.9)"),
    "J": (1, "N*m", "SI table 4: joule"),
    "kJ": (1000, "J", "SI prefix"),
    "MJ": (10**6, "J", "SI prefix"),
    "cal": (F("4.184"), "J", "NIST SP 811 B.9: thermochemical calorie = 4.184 J"),
    "kcal": (4184, "J", "NIST SP 811 B.9"),
    "eV": (F("1.602176634e-19"), "J", "SI table 8 and SI-2019: e × 1 V, e exact"),
    "Wh": (3600, "J", "SI: W × h"),
    "kWh": (3_600_000, "J", "SI: kW × h"),
    "W": (1, "J/s", "SI table 4: watt"),
    "kW": (1000, "W", "SI prefix"),
    "MW": (10**6, "W", "SI prefix"),
    "hp": (550 * FOOT * LBF, "W", "NIST SP 811 B.9: horsepower = 550 ft·lbf/s = 745.69987158227022 W"),
    "Pa": (1, "N/m**2", "SI table 4: pascal"),
    "hPa": (100, "Pa", "SI prefix"),
    "kPa": (1000, "Pa", "SI prefix"),
    "MPa": (10**6, "Pa", "SI prefix"),
    "bar": (10**5, "Pa", "NIST SP 811 B.9: bar = 1e5 Pa (SI brochure 8th ed. table 8)"),
    "mbar": (100, "Pa", "bar/1000"),
    "atm": (101325, "Pa", "CGPM 1954 (NIST SP 811 B.9): standard atmosphere = 101325 Pa"),
    "psi": (LBF / INCH**2, "Pa", "NIST SP 811 B.9: lbf/in² = 0.45359237 × 9.80665 / 0.0254² Pa"),
    "mmHg": (F("13.5951") * 1000 * G_N / 1000, "Pa", "NIST SP 811 B.9: conventional mmHg, 13.5951 g/cm³ × g_n × 1 mm"),
    "torr": (F(101325, 760), "Pa", "NIST SP 811 B.9: torr = 101325/760 Pa"),
    # frequency and electricity (SI table 4 derived units, through their definitions in base units)
    "Hz": (1, "1/s", "SI table 4: hertz"),
    "kHz": (1000, "Hz", "SI prefix"),
    "MHz": (10**6, "Hz", "SI prefix"),
    "GHz": (10**9, "Hz", "SI prefix"),
    "V": (1, "W/A", "SI table 4: volt"),
    "mV": (F(1, 1000), "V", "SI prefix"),
    "kV": (1000, "V", "SI prefix"),
    "A": (1, "A", "SI base unit"),
    "mA": (F(1, 1000), "A", "SI prefix"),
    "ohm": (1, "V/A", "SI table 4: ohm"),
    "C": (1, "A*s", "SI table 4: coulomb"),
    "F": (1, "C/V", "SI table 4: farad"),
    "T": (1, "Wb/m**2", "SI table 4: tesla"),
    "Wb": (1, "V*s", "SI table 4: weber"),
    "mol": (1, "mol", "SI base unit"),
    # angle
    "rad": (1, "rad", "SI table 4: radian"),
    "deg": (PI / 180, "rad", "SI table 8: degree = pi/180 rad"),
    "degree": (PI / 180, "rad", "SI table 8"),
    # information
    "bit": (1, "bit", "IEC: bit"),
    "B": (8, "bit", "IEC: byte (octet) = 8 bit"),
    "byte": (8, "bit", "IEC"),
    "kB": (8000, "bit", "SI prefix"),
    "MB": (8 * 10**6, "bit", "SI prefix"),
    "GB": (8 * 10**9, "bit", "SI prefix"),
    "TB": (8 * 10**12, "bit", "SI prefix"),
    "KiB": (8 * 2**10, "bit", "IEC binary prefix"),
    "MiB": (8 * 2**20, "bit", "IEC"),
    "GiB": (8 * 2**30, "bit", "IEC"),
    "TiB": (8 * 2**40, "bit", "IEC"),
    # absolute temperature
    "K": (1, "K", "SI base unit"),
    "kelvin": (1, "K", "SI base unit"),
}
MEASURED = {"Da", "dalton"}
# value in the scale → kelvin (SI: T/K = t/°C + 273.15; NIST SP 811 4.2.1.1 and B.9: T/K = (t/°F + 459.67)/1.8)
TEMPERATURES = {"degC": (F(0), F("273.15")), "celsius": (F(100), F("373.15")), "degF": (F(32), F("273.15"))}
TEMPERATURES["fahrenheit"] = (F(212), F("373.15"))


async def convert(client: Client, value: float, source: str, target: str) -> tuple[dict[str, Any], str]:
    result = await client.call_tool(
        "calculator_convert_units", {"value": value, "from_unit": source, "to_unit": target}
    )
    return data_of(result), text_of(result)


def exact(value: Any) -> Any:
    return sympy.Rational(value.numerator, value.denominator) if isinstance(value, Fraction) else sympy.sympify(value)


def test_the_reference_names_every_unit_the_tool_converts_with() -> None:
    assert set(REFERENCE) == set(unit_table()), set(REFERENCE) ^ set(unit_table())


@pytest.mark.anyio
async def test_every_unit_is_its_authoritative_definition(client: Client) -> None:
    """1 <unit> in its SI unit: `exact` is the definition exactly (the measured dalton: null, with its note)."""
    wrong = []
    for name, (value, si_unit, source) in REFERENCE.items():
        result = await client.call_tool("calculator_convert_units", {"value": 1, "from_unit": name, "to_unit": si_unit})
        if result.is_error:
            wrong.append(f"{name}: {text_of(result)}")
            continue
        data, expected = data_of(result), exact(value)
        if name in MEASURED:
            if data.get("exact") is not None or data["result"] != pytest.approx(float(expected), rel=1e-15):
                wrong.append(f"{name}: {data} (expected ≈ {float(expected)}, not exact; {source})")
            continue
        parsed = None if data["exact"] is None else parse_expr(data["exact"])
        if parsed is None or parsed.has(sympy.Float) or sympy.simplify(parsed - expected) != 0:
            wrong.append(f"{name}: exact {data['exact']!r}, expected {sympy.sstr(expected)} ({source})")
        elif data["result"] != pytest.approx(float(expected), rel=1e-15):
            wrong.append(f"{name}: result {data['result']!r}, expected {float(expected)!r} ({source})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.anyio
async def test_temperature_scales(client: Client) -> None:
    for name, (value, kelvin) in TEMPERATURES.items():
        data, _ = await convert(client, float(value), name, "K")
        assert sympy.Rational(data["exact"]) == exact(kelvin), (name, data)
    data, _ = await convert(client, 0, "degF", "K")
    assert data["exact"] == "45967/180"  # 459.67 / 1.8


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "source", "target", "result", "exact_text", "decimal"),
    [
        (1, "nmi", "m", 1852.0, "1852", "1852"),  # was 1851.9648 (sympy: 6076 ft)
        (1, "kn", "km/h", 1.852, "463/250", "1.852"),  # was 1.8519648
        (1, "au", "km", 149597870.7, "1495978707/10", "149597870.7"),  # was 149597870.691 (pre-2012)
        (1, "pc", "au", 206264.80624709636, "648000/pi", None),
        (1, "eV", "J", 1.602176634e-19, "801088317/5000000000000000000000000000", "1.602176634e-19"),  # was a float
        (1, "psi", "bar", 0.06894757293168362, "8896443230521/129032000000000", None),  # was 0.0689475729316836
        (1, "mmHg", "Pa", 133.322387415, "26664477483/200000000", "133.322387415"),  # was a float
        (1, "hp", "W", 745.6998715822702, "37284993579113511/50000000000000", "745.69987158227022"),
        (100, "km/h", "m/s", 27.77777777777778, "250/9", None),
        (0.1, "km", "m", 100.0, "100", "100"),  # the value as written: 0.1 is 1/10, not the double nearest it
        (0.1, "degC", "K", 273.25, "1093/4", "273.25"),
        (1, "deg", "rad", 0.017453292519943295, "pi/180", None),
    ],
)
async def test_exact_is_exact(
    client: Client, value: float, source: str, target: str, result: float, exact_text: str, decimal: str | None
) -> None:
    data, _ = await convert(client, value, source, target)
    assert (data["result"], data["exact"], data.get("decimal"), data.get("note")) == (result, exact_text, decimal, None)


@pytest.mark.anyio
async def test_psi_to_bar_is_the_rational_of_its_definition(client: Client) -> None:
    """0.45359237 × 9.80665 / 0.0254² / 100000, exactly (the tester's figure)."""
    data, _ = await convert(client, 1, "psi", "bar")
    assert Fraction(data["exact"]) == LB * G_N / INCH**2 / 100000


@pytest.mark.anyio
async def test_a_measured_constant_is_said_not_exact(client: Client) -> None:
    data, text = await convert(client, 12, "Da", "g")
    assert data["exact"] is None and data["decimal"] is None
    assert data["result"] == pytest.approx(12 * 1.66053906660e-24, rel=1e-15)
    assert "measured" in data["note"] and "CODATA 2018" in data["note"] and "1.66053906660(50)e-27" in data["note"]
    assert text.endswith(f"({data['note']})")
    same, _ = await convert(client, 2, "Da", "Da")  # the constant cancels: exact
    assert (same["exact"], same["note"]) == ("2", None)
