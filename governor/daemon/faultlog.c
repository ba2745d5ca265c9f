#include "governor/daemon/faultlog.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "hal/hal_serving.h"

static void names(uint32_t bits, const char *(*name)(uint32_t bit), char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < 32 && o < len; i++)
		if (bits & (1u << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", name(1u << i));
}

void fault_episode_note(struct fault_episode *ep, const char *dev, const char *source,
			uint32_t bits, const char *(*name)(uint32_t bit), const char *msg,
			uint64_t seq)
{
	char nb[256];
	uint32_t onset = bits & ~ep->bits;
	if (onset) {
		names(onset, name, nb, sizeof(nb));
		if (msg && !strncmp(msg, nb, strlen(nb)))
			log_warn("%s: %s fault: %.300s", dev, source, msg); /* msg names them itself */
		else
			log_warn("%s: %s fault: %s%s%.300s", dev, source, nb, msg ? ": " : "",
				 msg ? msg : "");
		if (!ep->bits)
			ep->since_seq = seq;
	} else if (!bits && ep->bits) {
		names(ep->bits, name, nb, sizeof(nb));
		log_notice("%s: %s fault cleared (%s) after %llu period(s)", dev, source, nb,
			   (unsigned long long)(seq - ep->since_seq));
	}
	ep->bits = bits;
}

/* A reset is the server restarting: informational, no episode. */
#define SV_EPISODE_MASK (~(uint32_t)HAL_SVF_RESET)

static const char *signal_of_bit(uint32_t bit)
{
	for (int s = 0; s < GOV_SIG_N; s++)
		if (bit == 1u << s)
			return gov_signal_name((enum gov_signal)s);
	return "?";
}

void fault_episodes_period(struct fault_episodes *eps, const char *dev, const struct gov_period *p)
{
	fault_episode_note(&eps->serving, dev, "serving", p->rec.serving_faults & SV_EPISODE_MASK,
			   hal_serving_fault_name, p->rec.serving_fault_msg, p->rec.seq);
	fault_episode_note(&eps->quality, dev, "quality", p->rec.quality_faults & SV_EPISODE_MASK,
			   hal_serving_fault_name, p->rec.quality_fault_msg, p->rec.seq);
	uint32_t sb = 0;
	char msg[256] = "";
	size_t o = 0;
	for (int s = 0; s < GOV_SIG_N && p->rec.faults; s++) {
		if (p->rec.faults[s] == GOV_FAULT_NONE)
			continue;
		sb |= 1u << s;
		if (o < sizeof(msg))
			o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s%s %s", o ? ", " : "",
					      gov_signal_name((enum gov_signal)s),
					      gov_fault_name(p->rec.faults[s]));
	}
	fault_episode_note(&eps->sensors, dev, "sensor", sb, signal_of_bit, sb ? msg : NULL, p->rec.seq);
}
