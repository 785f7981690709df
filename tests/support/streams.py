"""A driver for the packet-stream tests (test_stream_cobs.py, test_stream_crc.py,
test_host_contract.py): pushes words into a component's input stream and collects its output
stream in one Amaranth testbench, with random idle cycles on the input and random back pressure
on the output."""

from support.gateware import simulate

__all__ = ["exchange"]


def exchange(dut, words, *, rng, until, source="i", sink="o", p_valid=1.0, p_ready=1.0,
             limit=100000):
    """Simulate ``dut``: offer ``words`` (payload values: ints or dicts of fields) on its
    ``source`` stream, each in a cycle with probability ``p_valid``, while ``sink`` is ready
    with probability ``p_ready``; return the list of payloads taken on ``sink`` (ints, or
    dicts of the layout's fields) once ``until(outputs)`` holds after every input was taken.

    :raises AssertionError: if that takes more than ``limit`` cycles.
    """
    i, o = getattr(dut, source), getattr(dut, sink)
    fields = _fields(o.payload)
    outputs = []

    async def testbench(ctx):
        index = 0
        for _ in range(limit):
            offer = index < len(words) and rng.random() < p_valid
            ctx.set(i.valid, offer)
            if offer:
                ctx.set(i.payload, _value(i.payload, words[index]))
            if hasattr(o, "ready"):
                ctx.set(o.ready, rng.random() < p_ready)
            taken_in = offer and (not hasattr(i, "ready") or ctx.get(i.ready))
            ready = not hasattr(o, "ready") or ctx.get(o.ready)
            if ctx.get(o.valid) and ready:
                payload = ctx.get(o.payload)
                outputs.append({name: int(getattr(payload, name)) for name in fields}
                               if fields else int(payload))
            await ctx.tick()
            if taken_in:
                index += 1
            if index == len(words) and until(outputs):
                return
        raise AssertionError(f"no end after {limit} cycles: {index} of {len(words)} words "
                             f"taken, {len(outputs)} out")

    simulate(dut, testbench)
    return outputs


def _fields(payload):
    layout = getattr(payload.shape(), "members", None)
    return list(layout) if layout is not None else None


def _value(payload, word):
    if isinstance(word, dict):
        return {name: word.get(name, 0) for name in payload.shape().members}
    return word
