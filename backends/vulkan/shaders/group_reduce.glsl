// The work-group's max (take_max) or sum of v, returned to every invocation:
// a tree over shared memory, so WG (the work-group size) must be a power of
// two, as the host's sizes are. The includer declares `shared float red[WG]`
// and calls it from uniform control flow.
float group_reduce(float v, bool take_max)
{
    uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint half_ = WG / 2u; half_ > 0u; half_ /= 2u) {
        if (t < half_)
            red[t] = take_max ? max(red[t], red[t + half_]) : red[t] + red[t + half_];
        barrier();
    }
    float out_ = red[0];
    barrier(); // red is rewritten by the next call
    return out_;
}
