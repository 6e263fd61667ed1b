# batchline case helper: Paddle Serving 0.9.0's paddle_serving_app/reader/imdb_reader.py
# IMDBDataset (Apache-2.0, PaddlePaddle Authors), only what the example calls
# (load_resource, get_words_only, get_words_and_label), without its base class
# paddle.fluid.incubate.data_generator.MultiSlotDataGenerator (gone in Paddle 3).
import re
import sys

py_version = sys.version_info[0]


class IMDBDataset(object):
    def load_resource(self, dictfile):
        self._vocab = {}
        wid = 0
        if py_version == 2:
            with open(dictfile) as f:
                for line in f:
                    self._vocab[line.strip()] = wid
                    wid += 1
        else:
            with open(dictfile, encoding="utf-8") as f:
                for line in f:
                    self._vocab[line.strip()] = wid
                    wid += 1
        self._unk_id = len(self._vocab)
        self._pattern = re.compile(r'(;|,|\.|\?|!|\s|\(|\))')
        self.return_value = ("words", [1, 2, 3, 4, 5, 6]), ("label", [0])

    def get_words_only(self, line):
        sent = line.lower().replace("<br />", " ").strip()
        words = [x for x in self._pattern.split(sent) if x and x != " "]
        feas = [
            self._vocab[x] if x in self._vocab else self._unk_id for x in words
        ]
        return feas

    def get_words_and_label(self, line):
        send = '|'.join(line.split('|')[:-1]).lower().replace("<br />",
                                                              " ").strip()
        label = [int(line.split('|')[-1])]

        words = [x for x in self._pattern.split(send) if x and x != " "]
        feas = [
            self._vocab[x] if x in self._vocab else self._unk_id for x in words
        ]
        return feas, label
